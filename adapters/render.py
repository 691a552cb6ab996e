"""Rendering shared by the chat adapters: the pieces every front end composes its own way.

A ``Reply`` is chat-neutral (``core.contracts.messages``). Each adapter turns it into its platform's form (Discord
messages and embeds, Slack Block Kit, terminal text); what they all need lives here, written once:

- ``tone_icon``: the status mark of a tone;
- ``strip_markup``: report text without its ``**bold**`` and `code` spans;
- ``monospace_table``: a table as aligned text for a code block, cells cut to a width;
- ``split_text``: long text cut at line boundaries under a platform's limit, code fences kept balanced;
- ``pages``: rows in pages, for paginated tables;
- ``table_pages``: a table as monospace text pages under a character limit, the header on every page;
- ``chart_png``: a ``CHART`` part drawn as a PNG with matplotlib;
- ``summary_line``: one line for notifications and fallbacks;
- ``is_file`` / ``bundle``: code parts that are files, and many files as one zip archive;
- ``medal``: the mark of a top-3 rank in announcements.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime

from core.contracts.messages import Part, PartKind, Reply, Tone

_ICONS = {Tone.INFO: "🔵", Tone.SUCCESS: "✅", Tone.WARNING: "⚠️", Tone.ERROR: "❌"}
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE_SPAN = re.compile(r"`([^`]+)`")
FENCE = "```"
ELLIPSIS = "…"
MAX_FENCE_LINE = 24  # a longer opening fence line (odd language tag) is reopened as a bare fence


_EXTENSIONS = {"python": "py", "py": "py", "cuda": "cu", "cu": "cu", "cpp": "cpp", "c": "c"}


def tone_icon(tone: Tone) -> str:
    return _ICONS[tone]


def strip_markup(text: str) -> str:
    """Report text without its ``**bold**`` and `code` markers (for plain-text fields and notifications)."""
    return _CODE_SPAN.sub(r"\1", _BOLD.sub(r"\1", text))


def monospace_table(headers: Sequence[str], rows: Sequence[Sequence[str]], max_cell: int = 40) -> str:
    """Columns padded to their widest cell; cells longer than ``max_cell`` end in an ellipsis."""

    def cell(value: object) -> str:
        text = str(value).replace("\n", " ")
        return text if len(text) <= max_cell else text[: max_cell - 1] + ELLIPSIS

    grid = [[cell(h) for h in headers], *[[cell(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) if i < len(row) else 0 for row in grid) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in grid]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def split_text(text: str, limit: int) -> list[str]:
    """Cut ``text`` into chunks of at most ``limit`` characters, at line boundaries where possible.

    A chunk that ends inside a code fence is closed with a fence and the next chunk reopens it, so each
    chunk renders on its own. A single line longer than a chunk allows is cut hard.
    """
    reserve = len(FENCE) + 1  # room to close a fence at the end of any chunk
    piece_max = limit - reserve - MAX_FENCE_LINE - 1  # a reopened fence line plus one piece always fit
    if piece_max < 8:
        raise ValueError(f"limit {limit} is too small to split text into renderable chunks")
    chunks: list[str] = []
    lines: list[str] = []
    length = 0
    fence = ""  # the fence line to reopen with while the chunk so far is inside a code block

    def emit() -> None:
        chunks.append("\n".join(lines) + ("\n" + FENCE if fence else ""))

    for line in text.split("\n"):
        for start in range(0, max(len(line), 1), piece_max):
            piece = line[start : start + piece_max]
            if lines and length + 1 + len(piece) + reserve > limit:
                emit()
                lines = [fence] if fence else []
                length = len(fence)
            length += (1 if lines else 0) + len(piece)
            lines.append(piece)
            if start == 0 and piece.lstrip().startswith(FENCE):
                opening = piece.strip()
                fence = "" if fence else (opening if len(opening) <= MAX_FENCE_LINE else FENCE)
    if lines and lines != [fence]:
        emit()
    return chunks or [""]


def pages(rows: Sequence[Sequence[str]], per_page: int) -> list[list[Sequence[str]]]:
    """Rows cut into pages of ``per_page`` (at least one page, possibly empty)."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return [list(rows[i : i + per_page]) for i in range(0, len(rows), per_page)] or [[]]


def table_pages(headers: Sequence[str], rows: Sequence[Sequence[str]], limit: int, max_cell: int = 40) -> list[str]:
    """The table as monospace text pages of at most ``limit`` characters, each starting with the header lines.

    Rows are packed greedily; a page always holds at least one row (a row wider than the limit is cut).
    """
    lines = monospace_table(headers, rows, max_cell).split("\n")
    head, body = lines[:2], lines[2:]
    head_len = len("\n".join(head))
    if head_len + 2 > limit:
        raise ValueError(f"limit {limit} cannot hold the table's header")
    result: list[str] = []
    page: list[str] = []
    length = head_len
    for line in body:
        line = line[: limit - head_len - 1]
        if page and length + 1 + len(line) > limit:
            result.append("\n".join(head + page))
            page, length = [], head_len
        page.append(line)
        length += 1 + len(line)
    result.append("\n".join(head + page))
    return result


def chart_png(part: Part, width_in: float = 8.0, height_in: float = 4.0) -> bytes:
    """Draw a ``CHART`` part (one step line per series) as PNG bytes."""
    if part.kind is not PartKind.CHART:
        raise ValueError(f"chart_png needs a chart part, not {part.kind.value}")
    import matplotlib

    matplotlib.use("Agg")  # no display on a server
    from matplotlib import pyplot as plt

    series: dict[str, tuple[list, list[float]]] = {}
    for name, x, y in part.rows:
        xs, ys = series.setdefault(name, ([], []))
        xs.append(_x_value(x))
        ys.append(float(y))
    fig, ax = plt.subplots(figsize=(width_in, height_in), dpi=100)
    try:
        for name, (xs, ys) in series.items():
            ax.step(xs, ys, where="post", marker="o", label=name)
        ax.set_title(part.text)
        if part.headers:
            ax.set_xlabel(part.headers[0])
            ax.set_ylabel(part.headers[1] if len(part.headers) > 1 else "")
        if len(series) > 1:
            ax.legend()
        ax.grid(alpha=0.3)
        fig.autofmt_xdate()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight")
    finally:
        plt.close(fig)
    return buffer.getvalue()


def summary_line(reply: Reply) -> str:
    """The reply in one plain line: its title and first status or text (notification text, fallbacks)."""
    first = next((p.text for p in reply.parts if p.kind in (PartKind.STATUS, PartKind.TEXT) and p.text), "")
    words = [w for w in (reply.title, strip_markup(first)) if w]
    return f"{tone_icon(reply.tone)} " + ": ".join(words) if words else tone_icon(reply.tone)


def slug(title: str, fallback: str = "report") -> str:
    """A title as a file name's stem: ``Details of submission #12 on CPU`` -> ``details-of-submission-12-on-cpu``."""
    return re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:60] or fallback


def attachment_name(reply: Reply, part: Part, index: int) -> str:
    """The name a code part too long to show is attached under: its own, else the reply's title, numbered after the
    first (``details-of-submission-12-on-cpu.txt``), so a downloaded file says what it is."""
    if part.filename:
        return part.filename
    extension = _EXTENSIONS.get(part.language, "txt")
    return f"{slug(reply.title, 'output')}{f'-{index + 1}' if index else ''}.{extension}"


def is_file(part: Part) -> bool:
    """A code part that names a file (a submission, a template, a harness source): adapters attach it."""
    return part.kind is PartKind.CODE and bool(part.filename)


def bundle(files: Sequence[tuple[str, bytes]]) -> bytes:
    """Files as one zip archive (for platforms that cap the attachments of a message); names keep their folders."""
    buffer = io.BytesIO()
    stamp = datetime.now(UTC).timetuple()[:6]
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            info = zipfile.ZipInfo(name.lstrip("/"), date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


_MEDALS = {1: "🥇", 2: "🥈", 3: "🥉"}


def medal(rank: int) -> str:
    """🥇, 🥈, 🥉 for the first three ranks, ``#n`` after them."""
    return _MEDALS.get(rank, f"#{rank}")


def _x_value(x: str) -> datetime | float:
    try:
        return float(x)
    except ValueError:
        return datetime.fromisoformat(x)
