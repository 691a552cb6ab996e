"""Rendering replies as terminal text, with ANSI colour when the output is a terminal.

Text for people: a chart becomes one line per series (a sparkline, the first and the latest best, how many runs
over which days) instead of its data points; table cells longer than ``MAX_CELL`` are cut at a word, with an
ellipsis (the command that shows the whole text says so); files can be listed by name instead of printed whole.
"""

from __future__ import annotations

import re
from datetime import datetime

from core.contracts.messages import Part, PartKind, Reply, Tone
from core.contracts.reply_parts import clip, format_us

_TONE_COLOUR = {Tone.INFO: "36", Tone.SUCCESS: "32", Tone.WARNING: "33", Tone.ERROR: "31"}
_TONE_MARK = {Tone.INFO: "•", Tone.SUCCESS: "✔", Tone.WARNING: "!", Tone.ERROR: "✘"}
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_SPARKS = "▁▂▃▄▅▆▇█"
MAX_CELL = 60


def render(reply: Reply, colour: bool = False, files_hint: str = "") -> str:
    """The reply as text. With ``files_hint`` (how to print them all), files are listed by name, not printed."""
    parts = reply.parts
    lines = [_style(reply.title, "1", colour)] if reply.title else []
    files = [p for p in parts if p.kind is PartKind.CODE and p.filename] if files_hint else []
    lines += [_part(part, colour) for part in parts if part not in files]
    if files:
        lines.append(_table(["file", "lines"], [[f.filename, str(f.text.count("\n") + 1)] for f in files], colour))
        lines.append(files_hint)
    return "\n".join(line for line in lines if line)


def status_line(reply: Reply, colour: bool = False) -> str:
    """The one-line form of a progress reply, for rewriting in place."""
    return " ".join(_part(p, colour) for p in reply.parts if p.kind is PartKind.STATUS)


def error_line(message: str, colour: bool = False) -> str:
    """A refusal, shown the way an error reply is."""
    return _part(Part(kind=PartKind.STATUS, text=message, tone=Tone.ERROR), colour)


def _part(part: Part, colour: bool) -> str:
    if part.kind is PartKind.STATUS:
        return _style(f"{_TONE_MARK[part.tone]} {part.text}", _TONE_COLOUR[part.tone], colour)
    if part.kind is PartKind.TEXT:
        return _BOLD.sub(lambda m: _style(m.group(1), "1", colour), part.text)
    if part.kind is PartKind.TABLE:
        return _table(part.headers, part.rows, colour)
    if part.kind is PartKind.CODE:
        code = "\n".join("    " + line for line in part.text.rstrip().splitlines())
        return f"{_style(f'── {part.filename} ──', '1', colour)}\n{code}" if part.filename else code
    if part.kind is PartKind.CHART:
        return _chart(part)
    if part.kind is PartKind.IMAGE:
        return f"[image {part.filename}: open the web page or chat to see it]"
    return ""  # mentions mean nothing in a terminal


def _chart(part: Part) -> str:
    """One line per series: ``CPU  █▆▃▁  120 µs → 94 µs over 4 runs, 2026-11-20 to 2026-11-26``."""
    series: dict[str, list[tuple[str, float]]] = {}
    for name, x, y in part.rows:
        series.setdefault(name, []).append((x, float(y)))
    width = max(len(name) for name in series)
    lines = [part.text]
    for name, points in series.items():
        values = [y for _, y in points][-24:]
        low, high = min(values), max(values)
        spark = "".join(_SPARKS[round((v - low) / (high - low) * 7) if high > low else 0] for v in values)
        days = [_day(x) for x, _ in points]
        span = days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}"
        lines.append(
            f"  {name.ljust(width)}  {spark}  {format_us(points[0][1])} → {format_us(points[-1][1])} "
            f"over {len(points)} run{'s' if len(points) != 1 else ''}, {span}"
        )
    return "\n".join(lines)


def _day(x: str) -> str:
    try:
        return f"{datetime.fromisoformat(x):%Y-%m-%d}"
    except ValueError:
        return x


def _table(headers: list[str], rows: list[list[str]], colour: bool) -> str:
    rows = [[clip(str(cell), MAX_CELL) for cell in row] for row in rows]
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=False)]
    head = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False))
    body = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    return "\n".join([_style(head.rstrip(), "1", colour), *body])


def _style(text: str, code: str, colour: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if colour and text else text
