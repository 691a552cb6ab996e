"""Rate limits per person and GPU, and per leaderboard and GPU, counted from the stored submissions so that they
survive a restart.

The window lives in memory, filled from the database the first time a submission is checked (one query over
the last minute's runs, which DuckDB's zone maps keep cheap however many runs are stored), and kept up to date
by the checks themselves: the core is the only writer of submissions, so a check costs no query, and two
submissions checked at the same moment cannot both slip through while the first is being written. A command
sent again (same command id: a client retrying after its connection dropped) is not counted a second time, or
the retry of an accepted submission could be refused.
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from core.contracts.errors import RateLimited
from core.contracts.reply_parts import counted

WINDOW = timedelta(seconds=60)
SWEEP_AT = 10_000  # windows kept before the empty ones are dropped
Loader = Callable[[datetime], Awaitable[list[tuple[int, str, str, datetime]]]]  # since -> [(person, leaderboard,
#           gpu, submitted at)]
Key = tuple[str, int | str, str]  # ("person", person id, GPU) or ("board", leaderboard, GPU): one window each


class RateLimiter:
    """At most ``per_minute`` runs per person on each GPU in any 60 seconds (a person's own limit, set by an admin
    with ``admin limit PERSON``, instead where there is one); and where an admin set one with ``admin limit
    LEADERBOARD``, at most that many runs of everyone together on each GPU of the leaderboard."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.own: dict[int, int] | None = None  # person -> their own limit; None until read from the store
        self.boards: dict[str, int] = {}  # leaderboard (lower case) -> its limit, read with ``own``
        self._seen: dict[Key, deque[datetime]] = defaultdict(deque)
        self._commands: dict[str, datetime] = {}  # command id -> when it was counted, within the window
        self._loaded = False
        self._loading = asyncio.Lock()

    async def check(
        self, person_id: int, gpus: list[str], now: datetime, load: Loader, command_id: str = "", leaderboard: str = ""
    ) -> None:
        """Count one run on each of ``gpus`` of ``leaderboard`` for the person, or raise ``RateLimited`` (and count
        nothing)."""
        if not self._loaded:
            await self._load(now, load)
        if len(self._seen) > SWEEP_AT:
            self._seen = defaultdict(deque, {key: w for key, w in self._seen.items() if w and w[-1] > now - WINDOW})
        if len(self._commands) > SWEEP_AT:
            self._commands = {cid: at for cid, at in self._commands.items() if at > now - WINDOW}
        counted_at = self._commands.get(command_id)
        if counted_at is not None and counted_at > now - WINDOW:
            return
        mine = [self._window(("person", person_id, gpu), now) for gpu in gpus]
        limit = (self.own or {}).get(person_id, self.per_minute)
        for gpu, window in zip(gpus, mine, strict=True):
            if len(window) >= limit:
                raise _refusal(f"You have made {counted(limit, 'submission')} to {gpu} in the last minute", window, now)
        board_limit = self.boards.get(leaderboard.lower())  # kept counting without one: one may be set later
        theirs = [self._window(("board", leaderboard.lower(), gpu), now) for gpu in gpus]
        for gpu, window in zip(gpus, theirs, strict=True):
            if board_limit is not None and len(window) >= board_limit:
                raise _refusal(
                    f"{leaderboard} has had {counted(board_limit, 'submission')} to {gpu} in the last minute, its "
                    "limit for everyone together",
                    window,
                    now,
                )
        for window in mine + theirs:
            window.append(now)
        if command_id:
            self._commands[command_id] = now

    def uncount(
        self, person_id: int, gpus: list[str], at: datetime, command_id: str = "", leaderboard: str = ""
    ) -> None:
        """Take back what ``check`` counted at ``at``: the submission was a repeat of a stored one, or not stored."""
        if command_id and self._commands.get(command_id) == at:
            del self._commands[command_id]
        for key in [k for gpu in gpus for k in (("person", person_id, gpu), ("board", leaderboard.lower(), gpu))]:
            window = self._seen.get(key)
            if window and at in window:
                window.remove(at)

    def _window(self, key: Key, now: datetime) -> deque[datetime]:
        window = self._seen[key]
        while window and window[0] <= now - WINDOW:
            window.popleft()
        return window

    async def _load(self, now: datetime, load: Loader) -> None:
        async with self._loading:
            if self._loaded:
                return
            for person_id, leaderboard, gpu, at in await load(now - WINDOW):
                self._seen[("person", person_id, gpu)].append(at)
                self._seen[("board", leaderboard.lower(), gpu)].append(at)
            self._loaded = True


def _refusal(what: str, window: deque[datetime], now: datetime) -> RateLimited:
    wait = max(1, math.ceil((window[0] + WINDOW - now).total_seconds()))
    return RateLimited(f"{what}; try again in {wait} s.", retry_after_s=wait)
