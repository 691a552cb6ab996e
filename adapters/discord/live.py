"""A submission's status message, edited in place: a header line, then one line per GPU it runs on.

The status message is the bot's own message that the submission's thread starts from, so its id is known to
every reply of the submission (``ReplyTo.message``) and the bot token can edit it at any time. Lines are keyed
by GPU (``"H100: timing shape 2 of 5"``), which the text itself carries, so after a restart the current content
is read back and updated rather than rebuilt from nothing. Edits of one message are serialised, so a slow edit
never overwrites a newer one.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from dataclasses import dataclass, field

from adapters.discord.poster import Poster
from adapters.discord.render import CONTENT_LIMIT

MEMORY = 2000  # status messages and finished runs remembered
_LINE = re.compile(r"^\S+ ([^:\n]{1,40}):")


@dataclass
class _Status:
    header: str
    lines: OrderedDict[str, str] = field(default_factory=OrderedDict)  # GPU -> line
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def text(self) -> str:
        body = "\n".join([self.header, *self.lines.values()])
        return body if len(body) <= CONTENT_LIMIT else body[: CONTENT_LIMIT - 1] + "…"


def line_label(line: str) -> str:
    """The GPU a status line is about: ``"⏳ H100: testing"`` -> ``"H100"`` (empty when it names none)."""
    match = _LINE.match(line)
    return match.group(1) if match else ""


class LiveStatus:
    def __init__(self, poster: Poster) -> None:
        self._poster = poster
        self._status: OrderedDict[int, _Status] = OrderedDict()
        self._finished: OrderedDict[str, None] = OrderedDict()

    async def open(self, channel_id: int, message_id: int, header: str, lines: list[str]) -> None:
        """A new submission: its header and first lines (a line already updated by progress is kept)."""
        status = self._remember(message_id, _Status(header=header))
        async with status.lock:
            status.header = header
            for line in lines:
                status.lines.setdefault(line_label(line), line)
            await self._poster.edit_text(channel_id, message_id, status.text())

    async def update(self, channel_id: int, message_id: int, line: str, *, run: str, final: bool) -> None:
        """Show ``line`` for its GPU; progress for a run that already finished is ignored."""
        if run in self._finished:
            return
        if final:
            self._finished[run] = None
            while len(self._finished) > MEMORY:
                self._finished.popitem(last=False)
        status = self._status.get(message_id)
        if status is None:  # not seen since this process started: read what it shows
            current = await self._poster.read_text(channel_id, message_id)
            if current is None:
                return
            status = self._remember(message_id, _parse(current))
        async with status.lock:
            status.lines[line_label(line)] = line
            await self._poster.edit_text(channel_id, message_id, status.text())

    def finished(self, run: str) -> bool:
        return run in self._finished

    def _remember(self, message_id: int, status: _Status) -> _Status:
        status = self._status.setdefault(message_id, status)
        self._status.move_to_end(message_id)
        while len(self._status) > MEMORY:
            self._status.popitem(last=False)
        return status


def _parse(content: str) -> _Status:
    header, *rest = content.split("\n") or [""]
    status = _Status(header=header)
    for line in rest:
        status.lines[line_label(line)] = line
    return status
