"""The adapter's line to the core: commands out, replies back, bus trouble turned into an answer for people.

``CoreLink.ask`` never raises for bus trouble: a core that is down or slow becomes an error ``Reply`` with a
sentence a Discord user can act on. ``Catalogue`` keeps the leaderboard list (names and GPUs) for a short
while, for autocomplete (which must answer within 3 s) and to know when a GPU question is needed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from core.contracts.bus import Bus, BusError, CoreUnavailable
from core.contracts.commands import query_command
from core.contracts.messages import Actor, Command, CommandKind, Part, PartKind, Reply, ReplyTo, Tone

log = logging.getLogger(__name__)

CORE_DOWN = "kernelrank is not answering right now (it may be restarting); try again in a minute."
CATALOGUE_TTL_S = 30.0
AUTOCOMPLETE_TIMEOUT_S = 1.5  # Discord drops an autocomplete answer after 3 s


class CoreLink:
    """Without a bus (the bot only registering its commands) every command is answered "not answering"."""

    def __init__(self, bus: Bus | None, timeout_s: float) -> None:
        self.bus = bus
        self.timeout_s = timeout_s

    async def ask(self, command: Command, timeout_s: float | None = None) -> Reply:
        if self.bus is None:
            return _error(command, CORE_DOWN)
        try:
            return await self.bus.request(command, timeout_s=timeout_s or self.timeout_s)
        except CoreUnavailable as exc:
            log.warning("command %s (%s) not answered: %s", command.id, command.kind.value, exc)
            return _error(command, CORE_DOWN)
        except BusError as exc:
            log.error("command %s (%s) failed on the bus: %s", command.id, command.kind.value, exc)
            return _error(command, CORE_DOWN)


@dataclass(frozen=True)
class BoardInfo:
    name: str
    gpus: tuple[str, ...]


class Catalogue:
    """Leaderboard names and GPUs, asked of the core at most every ``ttl_s`` seconds."""

    def __init__(self, link: CoreLink, ttl_s: float = CATALOGUE_TTL_S) -> None:
        self._link = link
        self._ttl_s = ttl_s
        self._boards: list[BoardInfo] = []
        self._fetched = float("-inf")

    async def boards(self, actor: Actor) -> list[BoardInfo]:
        """The leaderboards; the last known list when the core does not answer in time."""
        if time.monotonic() - self._fetched < self._ttl_s:
            return self._boards
        reply = await self._link.ask(
            query_command(actor, _nowhere(actor), CommandKind.LIST), timeout_s=AUTOCOMPLETE_TIMEOUT_S
        )
        if reply.tone is not Tone.ERROR:
            self._boards = [
                BoardInfo(b["name"], tuple(b.get("gpus") or ())) for b in reply.data.get("leaderboards", [])
            ]
            self._fetched = time.monotonic()
        return self._boards

    async def gpus_of(self, actor: Actor, leaderboard: str) -> tuple[str, ...]:
        """The GPUs a leaderboard offers; empty when it is unknown (the core will say so)."""
        wanted = leaderboard.lower()
        return next((b.gpus for b in await self.boards(actor) if b.name.lower() == wanted), ())


def _nowhere(actor: Actor) -> ReplyTo:
    return ReplyTo(platform=actor.platform, user=actor.user_id)


def _error(command: Command, message: str) -> Reply:
    return Reply(
        reply_to=command.reply_to,
        parts=[Part(kind=PartKind.STATUS, text=message, tone=Tone.ERROR)],
        tone=Tone.ERROR,
        in_reply_to=command.id,
        ephemeral=True,
    )
