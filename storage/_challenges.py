"""Challenges, their scheduled actions (recorded when they start and when they are done), leaderboards' rounds and
teams.

``Store.challenges`` is a ``Challenges`` on the store's cursors and locks: the SQL of challenges stays here, out
of ``store.py``. The challenges and the rounds are kept in memory as well (read once at the store's opening,
``remember``): the store is their only writer, and each write here reads them again in its own transaction and
puts them in memory once it has committed, so ``listed`` and ``round_starts`` never touch DuckDB and never lag a
write (``show`` asks for both on every call: about 1.5 ms of DuckDB, docs/benchmarks.md, issue 31).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from storage._part import Cursor, StorePart
from storage._sql import one_row
from storage._time import as_utc
from storage.records import Challenge

_COLUMNS = """id, title, leaderboards, opens_at::TIMESTAMP, closes_at::TIMESTAMP, announce, created_by,
              cancelled_at::TIMESTAMP, results, deadline_of,
              (SELECT list(action) FROM challenge_actions a WHERE a.challenge_id = c.id AND a.done_at IS NOT NULL)"""


class Challenges(StorePart):
    def __init__(self, reading: Callable[[], AbstractContextManager[Cursor]], writing: Callable[..., Any]) -> None:
        super().__init__(reading, writing)
        # Replaced whole by each write, never changed in place: readers on other threads share them.
        self._listed: tuple[Challenge, ...] = ()  # by closing time
        self._rounds: dict[str, tuple[datetime, ...]] = {}  # leaderboard -> when its rounds after the first began
        self._keeping = threading.Lock()  # memory takes the writes in the order they commit

    def remember(self) -> None:
        """Read the challenges and rounds into memory: at the store's opening (once migrated), and after a write
        elsewhere in the store erased some (``Store.delete_leaderboard``)."""
        with self._keeping, self._reading() as cur:
            self._listed, self._rounds = _read_listed(cur), _read_rounds(cur)

    @contextmanager
    def _changing(self) -> Iterator[Cursor]:
        """A write of challenges or rounds: both are read again in its transaction, and kept once it committed."""
        with self._keeping:
            with self._writing() as cur:
                yield cur
                fresh = _read_listed(cur), _read_rounds(cur)
            self._listed, self._rounds = fresh

    def add(self, ch: Challenge, now: datetime) -> Challenge:
        with self._changing() as cur:
            (new_id,) = one_row(
                cur.execute(
                    """INSERT INTO challenges (title, leaderboards, opens_at, closes_at, announce, created_by,
                                              created_at, deadline_of)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                    [
                        ch.title,
                        ch.leaderboards,
                        as_utc(ch.opens_at),
                        as_utc(ch.closes_at),
                        ch.announce,
                        ch.created_by,
                        as_utc(now),
                        ch.deadline_of,
                    ],
                )
            )
            for action in sorted(ch.done):  # done from the start (an opening already past): in the same transaction,
                cur.execute(  # so the scheduler never sees the challenge without them
                    "INSERT INTO challenge_actions (challenge_id, action, started_at, done_at) VALUES (?, ?, ?, ?)",
                    [new_id, action, as_utc(now), as_utc(now)],
                )
        return replace(ch, id=new_id)

    def update(self, ch: Challenge) -> None:
        """Store its title, settings, cancellation and results (``started``/``done`` keep its scheduled actions)."""
        with self._changing() as cur:
            cur.execute(
                """UPDATE challenges SET title = ?, leaderboards = ?, opens_at = ?, closes_at = ?, announce = ?,
                          cancelled_at = ?, results = ? WHERE id = ?""",
                [
                    ch.title,
                    ch.leaderboards,
                    as_utc(ch.opens_at),
                    as_utc(ch.closes_at),
                    ch.announce,
                    ch.cancelled_at and as_utc(ch.cancelled_at),
                    None if ch.results is None else json.dumps(ch.results),
                    ch.id,
                ],
            )

    def get(self, title: str) -> Challenge | None:
        with self._reading() as cur:
            row = cur.execute(f"SELECT {_COLUMNS} FROM challenges c WHERE lower(title) = lower(?)", [title]).fetchone()
        return None if row is None else _challenge(row)

    def deadline_of(self, leaderboard: str) -> Challenge | None:
        """The latest of the leaderboard's own challenges (the one that follows its deadline)."""
        with self._reading() as cur:
            row = cur.execute(
                f"SELECT {_COLUMNS} FROM challenges c WHERE lower(deadline_of) = lower(?) ORDER BY id DESC LIMIT 1",
                [leaderboard],
            ).fetchone()
        return None if row is None else _challenge(row)

    def listed(self) -> list[Challenge]:
        """Every challenge, cancelled ones included, by closing time (from memory: no DuckDB)."""
        return list(self._listed)

    def started(self, challenge_id: int, action: str, now: datetime) -> None:
        """Note that an action starts (once: a second start keeps the first time)."""
        with self._writing() as cur:
            cur.execute(
                """INSERT INTO challenge_actions (challenge_id, action, started_at) VALUES (?, ?, ?)
                           ON CONFLICT DO NOTHING""",
                [challenge_id, action, as_utc(now)],
            )

    def done(self, challenge_id: int, action: str, now: datetime) -> None:
        with self._changing() as cur:
            cur.execute(
                """INSERT INTO challenge_actions (challenge_id, action, started_at, done_at) VALUES (?, ?, ?, ?)
                           ON CONFLICT DO UPDATE SET done_at = excluded.done_at""",
                [challenge_id, action, as_utc(now), as_utc(now)],
            )

    def interval(self, run_id: str) -> tuple[float, float] | None:
        """A run's score interval: the geometric means of its shapes' 95 % confidence bounds (None without them)."""
        with self._reading() as cur:
            row = cur.execute(
                """SELECT exp(avg(ln(ci_low_us))), exp(avg(ln(ci_high_us))), count(*) FILTER (ci_low_us IS NULL
                          OR ci_low_us <= 0)
                   FROM shape_results WHERE run_id = ?""",
                [run_id],
            ).fetchone()
        return None if row is None or row[0] is None or row[2] else (row[0], row[1])

    def round_starts(self, leaderboard: str) -> list[datetime]:
        """When each round of the leaderboard after its first began (or begins), in order (from memory: no DuckDB)."""
        return list(self._rounds.get(leaderboard, ()))

    def start_round(self, leaderboard: str, at: datetime, after: datetime) -> None:
        """Start a round at ``at``, the leaderboard's next opening after its crowned close ``after``; a round started
        since that close already (a reopen, then a challenge opening later) is moved to ``at``, not split."""
        with self._changing() as cur:
            cur.execute("DELETE FROM rounds WHERE leaderboard = ? AND started_at > ?", [leaderboard, as_utc(after)])
            cur.execute(
                "INSERT INTO rounds (leaderboard, started_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [leaderboard, as_utc(at)],
            )

    def add_to_team(self, team: str, person_ids: list[int]) -> None:
        """Put people in ``team`` (a person is in one team: joining one leaves the other)."""
        with self._writing() as cur:
            for person_id in person_ids:
                cur.execute("DELETE FROM teams WHERE person_id = ?", [person_id])
                cur.execute("INSERT INTO teams (team, person_id) VALUES (?, ?)", [team, person_id])

    def teams(self) -> dict[int, str]:
        """Each person's team."""
        with self._reading() as cur:
            return dict(cur.execute("SELECT person_id, team FROM teams").fetchall())


def _read_listed(cur: Cursor) -> tuple[Challenge, ...]:
    return tuple(
        _challenge(row) for row in cur.execute(f"SELECT {_COLUMNS} FROM challenges c ORDER BY closes_at, id").fetchall()
    )


def _read_rounds(cur: Cursor) -> dict[str, tuple[datetime, ...]]:
    rounds: dict[str, tuple[datetime, ...]] = {}
    for leaderboard, at in cur.execute(
        "SELECT leaderboard, started_at::TIMESTAMP FROM rounds ORDER BY leaderboard, started_at"
    ).fetchall():
        rounds[leaderboard] = (*rounds.get(leaderboard, ()), as_utc(at))
    return rounds


def _challenge(row: Any) -> Challenge:
    (id_, title, leaderboards, opens_at, closes_at, announce, created_by, cancelled_at, results, deadline_of, done) = (
        row
    )
    return Challenge(
        id=id_,
        title=title,
        leaderboards=list(leaderboards),
        opens_at=as_utc(opens_at),
        closes_at=as_utc(closes_at),
        announce=list(announce),
        created_by=created_by,
        cancelled_at=cancelled_at and as_utc(cancelled_at),
        results=None if results is None else json.loads(results),
        done=frozenset(done or ()),
        deadline_of=deadline_of,
    )
