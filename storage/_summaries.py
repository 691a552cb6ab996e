"""Per-leaderboard counts that listing shows, kept by the store instead of recounted: each (leaderboard, person)'s
number of submissions, in memory.

``list_leaderboards`` (the home page, ``kernelrank list``, ``/v1/health``) read them by joining every submission:
329 ms at 1M runs. The store is the only writer of its file (the core alone opens it), so it counts once when it
opens (one aggregate over the submissions) and then keeps the counts itself, under the intake lock that every write
of submissions holds: ``add`` (new submissions), ``recount`` (a link or unlink moved some between people; a bulk
import), ``forget`` (a purge). A write that fails after counting marks them stale, and the next read counts again.
Invalidation and hiding change no count: a listed count includes invalidated submissions, and a hidden leaderboard
is not listed. A table kept in each transaction would cost an upsert per write round (1.7 ms of CPU measured).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import duckdb

from storage._sql import placeholders

Cursor = duckdb.DuckDBPyConnection


class BoardCounts:
    def __init__(self) -> None:
        self._by_board: dict[str, dict[int, int]] = {}  # leaderboard -> person_id -> submissions
        self._totals: dict[str, int] = {}  # leaderboard -> submissions
        self._lock = threading.Lock()
        self.stale = True

    def recount(self, cur: Cursor, people: Sequence[int] | None = None) -> None:
        """Count the submissions of ``people`` (everyone's when None) again, from what ``cur`` sees."""
        if people is not None and not people:
            return
        where, values = ("true", []) if people is None else (f"person_id IN ({placeholders(people)})", list(people))
        rows = cur.execute(
            f"SELECT leaderboard, person_id, count(*) FROM submissions WHERE {where} GROUP BY ALL", values
        ).fetchall()
        with self._lock:
            if people is None:
                self._by_board = {}
            else:
                for counts in self._by_board.values():
                    for person_id in people:
                        counts.pop(person_id, None)
            for board, person_id, count in rows:
                self._by_board.setdefault(board, {})[person_id] = count
            self._totals = {board: sum(counts.values()) for board, counts in self._by_board.items()}
            if people is None:
                self.stale = False

    def add(self, stored: Iterable[tuple[str, int]]) -> None:
        """Count new submissions, given as their (leaderboard, person_id)."""
        with self._lock:
            for board, person_id in stored:
                counts = self._by_board.setdefault(board, {})
                counts[person_id] = counts.get(person_id, 0) + 1
                self._totals[board] = self._totals.get(board, 0) + 1

    def forget(self, board: str) -> None:
        with self._lock:
            self._by_board.pop(board, None)
            self._totals.pop(board, None)

    def per_board(self) -> dict[str, tuple[int, int]]:
        """leaderboard -> (submissions, people who submitted)."""
        with self._lock:
            return {board: (self._totals[board], len(counts)) for board, counts in self._by_board.items()}
