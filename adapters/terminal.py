"""Rendering replies as terminal text, with ANSI colour when the output is a terminal."""

from __future__ import annotations

import re

from core.contracts.messages import Part, PartKind, Reply, Tone

_TONE_COLOUR = {Tone.INFO: "36", Tone.SUCCESS: "32", Tone.WARNING: "33", Tone.ERROR: "31"}
_TONE_MARK = {Tone.INFO: "•", Tone.SUCCESS: "✔", Tone.WARNING: "!", Tone.ERROR: "✘"}
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def render(reply: Reply, colour: bool = False) -> str:
    lines = [_style(reply.title, "1", colour)] if reply.title else []
    lines += [_part(part, colour) for part in reply.parts]
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
        return _table(["series", *part.headers], part.rows, colour)
    if part.kind is PartKind.IMAGE:
        return f"[image {part.filename}: open the web page or chat to see it]"
    return ""  # mentions mean nothing in a terminal


def _table(headers: list[str], rows: list[list[str]], colour: bool) -> str:
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=False)]
    head = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False))
    body = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    return "\n".join([_style(head.rstrip(), "1", colour), *body])


def _style(text: str, code: str, colour: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if colour and text else text
