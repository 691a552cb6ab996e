"""Rendering replies as terminal text, with ANSI colour where the output is a terminal (``Screen`` decides).

Text for people: a chart becomes one line per series (a sparkline, the first and the latest best, how many runs
over which days) instead of its data points; tables fit the terminal's width (their widest columns give way, each
cut cell ending in an ellipsis; into a pipe, cells longer than ``MAX_CELL`` are cut); files can be listed by name
instead of printed whole. ``LiveRows`` keeps one progress line per run on screen, rewritten in place.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from typing import TextIO

from core.contracts.messages import Part, PartKind, Reply, Tone
from core.contracts.reply_parts import clip, format_us

_TONE_COLOUR = {Tone.INFO: "36", Tone.SUCCESS: "32", Tone.WARNING: "33", Tone.ERROR: "31"}
_TONE_MARK = {Tone.INFO: "•", Tone.SUCCESS: "✔", Tone.WARNING: "!", Tone.ERROR: "✘"}
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_SPARKS = "▁▂▃▄▅▆▇█"
MAX_CELL = 60
MIN_COLUMN = 8  # a column narrowed to fit the width keeps at least this many characters


@dataclass(frozen=True)
class Screen:
    """Where the output goes: whether to colour it, how wide it is (``None``: a pipe, no width), whether lines can
    be rewritten in place."""

    colour: bool = False
    width: int | None = None
    live: bool = False

    @classmethod
    def of(cls, stream: TextIO) -> Screen:
        """``NO_COLOR`` (no-color.org) turns colour off, ``FORCE_COLOR`` on, else a terminal has it; ``COLUMNS``
        or the terminal's size gives the width."""
        terminal = stream.isatty() and os.environ.get("TERM") != "dumb"
        colour = not os.environ.get("NO_COLOR") and (bool(os.environ.get("FORCE_COLOR")) or terminal)
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() else shutil.get_terminal_size().columns if terminal else None
        return cls(colour=colour, width=width, live=terminal)


def render(reply: Reply, colour: bool = False, files_hint: str = "", width: int | None = None) -> str:
    """The reply as text, its tables fitted to ``width``. With ``files_hint`` (how to print them all), files are
    listed by name, not printed."""
    parts = reply.parts
    lines = [_style(reply.title, "1", colour)] if reply.title else []
    files = [p for p in parts if p.kind is PartKind.CODE and p.filename] if files_hint else []
    lines += [_part(part, colour, width) for part in parts if part not in files]
    if files:
        rows = [[f.filename, str(f.text.count("\n") + 1)] for f in files]
        lines.append(_table(["file", "lines"], rows, colour, width))
        lines.append(files_hint)
    return "\n".join(line for line in lines if line)


def status_line(reply: Reply, colour: bool = False, width: int | None = None) -> str:
    """The one-line form of a progress reply, cut to ``width`` so that it stays one line on screen."""
    text = " ".join(f"{_TONE_MARK[p.tone]} {p.text}" for p in reply.parts if p.kind is PartKind.STATUS)
    tone = next((p.tone for p in reply.parts if p.kind is PartKind.STATUS), Tone.INFO)
    return _style(clip(text, width - 1) if width else text, _TONE_COLOUR[tone], colour)


class LiveRows:
    """One progress line per run. On a terminal the lines stay together at the bottom, each rewritten in place as
    its run moves on, and a run's report is printed above them when it ends; elsewhere each update is a line."""

    def __init__(self, out: TextIO, screen: Screen) -> None:
        self.out = out
        self.screen = screen
        self.rows: dict[str, str] = {}
        self.shown = 0  # lines of rows now on screen

    def update(self, key: str, line: str) -> None:
        self.rows[key] = line
        if not self.screen.live:
            print(line, file=self.out, flush=True)
            return
        self._clear()
        self._draw()

    def finish(self, key: str, report: str) -> None:
        """The run's row gives way to its report."""
        self.rows.pop(key, None)
        self._clear()
        print(report + "\n", file=self.out)
        self._draw()

    def _clear(self) -> None:
        if self.shown:  # up to the first row, then erase to the end of the screen
            self.out.write(f"\033[{self.shown}F\033[J")
            self.shown = 0

    def _draw(self) -> None:
        if self.screen.live:
            self.out.write("".join(f"\033[K{line}\n" for line in self.rows.values()))
            self.shown = len(self.rows)
        self.out.flush()


def error_line(message: str, colour: bool = False) -> str:
    """A refusal, shown the way an error reply is."""
    return _part(Part(kind=PartKind.STATUS, text=message, tone=Tone.ERROR), colour)


def _part(part: Part, colour: bool, width: int | None = None) -> str:
    if part.kind is PartKind.STATUS:
        return _style(f"{_TONE_MARK[part.tone]} {part.text}", _TONE_COLOUR[part.tone], colour)
    if part.kind is PartKind.TEXT:
        return _BOLD.sub(lambda m: _style(m.group(1), "1", colour), part.text)
    if part.kind is PartKind.TABLE:
        return _table(part.headers, part.rows, colour, width)
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


def _table(headers: list[str], rows: list[list[str]], colour: bool, width: int | None = None) -> str:
    """Columns two spaces apart. Within ``width`` the widest columns give way until the table fits; without one
    (a pipe) each cell is cut at ``MAX_CELL``."""
    text = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(c) for c in column) for column in zip(headers, *text, strict=False)]
    if width is None:
        widths = [min(w, MAX_CELL) for w in widths]
    else:
        while sum(widths) + 2 * (len(widths) - 1) > width - 1 and max(widths) > MIN_COLUMN:
            widest = widths.index(max(widths))
            widths[widest] -= 1
    rows = [[clip(cell, w) for cell, w in zip(row, widths, strict=False)] for row in text]
    headers = [clip(h, w) for h, w in zip(headers, widths, strict=False)]
    widths = [max(len(c) for c in column) for column in zip(headers, *rows, strict=False)]  # cut at words
    head = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False))
    body = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    return "\n".join([_style(head.rstrip(), "1", colour), *body])


def _style(text: str, code: str, colour: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if colour and text else text
