"""The problem's reference, timed by the judge on each GPU: one figure per (leaderboard, problem version, GPU), kept
so rankings can say how a kernel compares. A new version of the problem has none until its reference is timed again;
the figures of earlier versions stay for their runs. ``Store.references`` is a ``ReferenceTimes``."""

from __future__ import annotations

from datetime import datetime

from storage._part import StorePart
from storage._time import as_utc


class ReferenceTimes(StorePart):
    def record(self, leaderboard: str, version: int, gpu: str, score_us: float, run_id: str, now: datetime) -> None:
        """The reference's score (its ranked figure, by the problem's ranking rule); a repeat replaces it."""
        with self._writing() as cur:
            cur.execute(
                """INSERT INTO reference_times VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET
                       score_us = excluded.score_us, run_id = excluded.run_id, timed_at = excluded.timed_at""",
                [leaderboard, version, gpu, score_us, run_id, as_utc(now)],
            )

    def of(self, leaderboard: str, version: int) -> dict[str, float]:
        """The reference's score on each GPU it was timed on, for this version of the problem."""
        with self._reading() as cur:
            rows = cur.execute(
                "SELECT gpu, score_us FROM reference_times WHERE leaderboard = ? AND version = ?",
                [leaderboard, version],
            ).fetchall()
        return dict(rows)
