"""The problem's reference, timed by the judge on each GPU: one figure per (leaderboard, problem version, GPU), kept
so rankings can say how a kernel compares. A new version of the problem has none until its reference is timed again;
the figures of earlier versions stay for their runs. ``Store.references`` is a ``ReferenceTimes``.

The figures are kept in memory as well (read once at the store's opening, ``remember``): the store is their only
writer, and ``record`` keeps its figure once committed, so ``of`` (on every ``show``) never touches DuckDB."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from storage._part import Cursor, StorePart
from storage._time import as_utc

Times = dict[tuple[str, int], dict[str, float]]  # (leaderboard, version) -> GPU -> the reference's score


class ReferenceTimes(StorePart):
    def __init__(self, reading: Callable[[], AbstractContextManager[Cursor]], writing: Callable[..., Any]) -> None:
        super().__init__(reading, writing)
        self._times: Times = {}  # replaced whole by each write, never changed in place: readers share it
        self._keeping = threading.Lock()  # memory takes the writes in the order they commit

    def remember(self) -> None:
        """Read every figure into memory (the store calls it at its opening, once migrated)."""
        times: Times = {}
        with self._keeping, self._reading() as cur:
            for leaderboard, version, gpu, score_us in cur.execute(
                "SELECT leaderboard, version, gpu, score_us FROM reference_times"
            ).fetchall():
                times.setdefault((leaderboard, version), {})[gpu] = score_us
            self._times = times

    def record(self, leaderboard: str, version: int, gpu: str, score_us: float, run_id: str, now: datetime) -> None:
        """The reference's score (its ranked figure, by the problem's ranking rule); a repeat replaces it."""
        with self._keeping:
            with self._writing() as cur:
                cur.execute(
                    """INSERT INTO reference_times VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET
                           score_us = excluded.score_us, run_id = excluded.run_id, timed_at = excluded.timed_at""",
                    [leaderboard, version, gpu, score_us, run_id, as_utc(now)],
                )
            key = (leaderboard, version)
            self._times = {**self._times, key: {**self._times.get(key, {}), gpu: score_us}}

    def of(self, leaderboard: str, version: int) -> dict[str, float]:
        """The reference's score on each GPU it was timed on, for this version of the problem (from memory)."""
        return dict(self._times.get((leaderboard, version), {}))
