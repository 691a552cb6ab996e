"""A leaderboard's rounds: the stretch of time between one crowned close and the next.

A leaderboard's first round begins with it. When it opens again after a crowned close (of its own challenge or of
an admin's), a new round starts: at the opening of the challenge that reopened it, or when an admin reopened it
(``note_reopening``, called on every change to a leaderboard). A ranking of a round counts only the submissions
sent in it, so ``show`` ranks the current round, and the podium at a close crowns the round in force at that close,
never entries of a past round; ``show NAME --round N`` reads a past round and ``--round all`` all time.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import datetime

from core.contracts.errors import UserError
from core.service.deps import Deps
from storage.records import Leaderboard, RankRow, RunInfo

Window = tuple[datetime | None, datetime | None]


@dataclass(frozen=True)
class Rounds:
    """The leaderboard's rounds: round 1 began with it, round k + 1 at ``starts[k - 1]``."""

    starts: list[datetime]

    def number_at(self, moment: datetime) -> int:
        """The round in force at ``moment`` (a round that begins later is not in force yet)."""
        return 1 + bisect.bisect_right(self.starts, moment)

    def window(self, number: int) -> Window | None:
        """Round ``number``'s (since, until); None when the leaderboard has had one round only (all time, the
        quick ranking)."""
        if not self.starts:
            return None
        since = self.starts[number - 2] if number > 1 else None
        until = self.starts[number - 1] if number <= len(self.starts) else None
        return since, until

    def describe(self, number: int) -> str:
        begin = f"from {self.starts[number - 2]:%Y-%m-%d %H:%M} UTC" if number > 1 else "from its start"
        end = f" to {self.starts[number - 1]:%Y-%m-%d %H:%M} UTC" if number <= len(self.starts) else ""
        return f"round {number} of {len(self.starts) + 1}, {begin}{end}"


def rounds_of(deps: Deps, leaderboard: str) -> Rounds:
    return Rounds(deps.db.store.challenges.round_starts(leaderboard))  # the store keeps them in memory: no read


async def standings(deps: Deps, ranked: list[RunInfo], top: int) -> dict[tuple[str, str], dict[int, RankRow]]:
    """Where each (leaderboard, GPU) a batch of ranked results touched stands in its current round: its first ``top``
    (announcements) and the authors' entries (their replies); one query per board, never every entry of it."""
    authors: dict[tuple[str, str], set[int]] = {}
    for run in ranked:
        authors.setdefault((run.leaderboard, run.gpu), set()).add(run.person_id)
    now, found = deps.now(), {}
    for (lb, gpu), people in authors.items():
        rounds = rounds_of(deps, lb)
        window = rounds.window(rounds.number_at(now))
        rows = await deps.db.read(deps.db.store.standing, lb, gpu, sorted(people), top, window)
        found[(lb, gpu)] = {row.person_id: row for row in rows}
    return found


def chosen_window(deps: Deps, leaderboard: str, wanted: str) -> tuple[Window | None, str]:
    """The window ``show``'s ``--round`` asks for (empty: the current round; ``all``; a number from 1) and the
    words that name it ("" for a leaderboard of one round)."""
    rounds = rounds_of(deps, leaderboard)
    last = len(rounds.starts) + 1
    wanted = wanted.strip().lower()
    if wanted == "all":
        return None, "all time" if rounds.starts else ""
    if not wanted or wanted == "current":
        number = rounds.number_at(deps.now())
    elif wanted.isdigit() and 1 <= int(wanted) <= last:
        number = int(wanted)
    else:
        raise UserError(
            f"{leaderboard} has {'1 round' if last == 1 else f'rounds 1 to {last}'}: give --round "
            f"{'1' if last == 1 else f'a number from 1 to {last}'}, or all for all time."
        )
    return rounds.window(number), rounds.describe(number) if rounds.starts else ""


async def note_reopening(lb: Leaderboard, deps: Deps) -> None:
    """Start a round when ``lb`` (as just saved) is open again after a crowned close: at its opening when that
    came after the close (a new challenge's), else now (a reopen)."""
    now = deps.now()
    if lb.deadline is not None and lb.deadline <= now:
        return  # closed
    closes = [
        ch.closes_at
        for ch in deps.db.store.challenges.listed()
        if lb.name in ch.leaderboards and ch.cancelled_at is None and ch.closes_at <= now
    ]
    if not closes:
        return
    last_close = max(closes)
    rounds = rounds_of(deps, lb.name)
    start = lb.opens_at if lb.opens_at is not None and lb.opens_at > last_close else now
    latest = rounds.starts[-1] if rounds.starts else None
    if latest is not None and latest >= last_close and (latest <= now or latest == start):
        return  # this opening's round began already (a file migrated from before rounds has it at the close)
    await deps.db.write(deps.db.store.challenges.start_round, lb.name, start, last_close)
