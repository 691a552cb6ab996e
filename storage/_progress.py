"""A person's best score over time, per (leaderboard, GPU), in as many points as a chart can draw.

A best-over-time curve is a step function: it changes only where a run beats every earlier one. So the query keeps
those runs (each new best) and the latest run (where the curve ends), and drops the runs that changed nothing: a
5,000-submission history draws the same chart from a few dozen points. A series with more new bests than
``MAX_POINTS`` keeps that many, evenly spread over it, always its first and its last. One query serves every series
of a person, so a page costs one scan of their runs, not one per series.
"""

from __future__ import annotations

import duckdb

from storage._ranking import COUNTS
from storage._time import as_utc
from storage.records import Series

Cursor = duckdb.DuckDBPyConnection
MAX_POINTS = 100  # per series: a chart 640 px wide shows no more

_STEPS = f"""
    WITH mine AS (
        SELECT s.leaderboard, r.gpu, s.created_at, s.id, r.score_us
        FROM submissions s JOIN runs r ON r.submission_id = s.id
        WHERE s.person_id = $person_id AND ($leaderboard IS NULL OR s.leaderboard = $leaderboard)
          AND ($gpu IS NULL OR r.gpu = $gpu) AND {COUNTS}),
    curve AS (
        SELECT leaderboard, gpu, created_at, id,
               min(score_us) OVER (PARTITION BY leaderboard, gpu ORDER BY created_at, id
                                   ROWS UNBOUNDED PRECEDING) AS best,
               count(*) OVER (PARTITION BY leaderboard, gpu) AS runs,
               row_number() OVER (PARTITION BY leaderboard, gpu ORDER BY created_at DESC, id DESC) AS from_end
        FROM mine),
    steps AS (
        SELECT *, lag(best) OVER (PARTITION BY leaderboard, gpu ORDER BY created_at, id) AS before FROM curve)
    SELECT leaderboard, gpu, runs, created_at::TIMESTAMP, best FROM steps
    WHERE before IS NULL OR best < before OR from_end = 1
    ORDER BY leaderboard, gpu, created_at, id
"""


def progress(
    cur: Cursor, person_id: int, leaderboard: str | None = None, gpu: str | None = None
) -> dict[tuple[str, str], Series]:
    """Each (leaderboard, GPU) series of the person's passed ranked runs (only ``leaderboard`` and ``gpu``'s if
    given), as its new bests and its latest run, at most ``MAX_POINTS`` of them."""
    found: dict[tuple[str, str], Series] = {}
    rows = cur.execute(_STEPS, {"person_id": person_id, "leaderboard": leaderboard, "gpu": gpu}).fetchall()
    for board, on, runs, at, best in rows:
        found.setdefault((board, on), Series(runs, [])).points.append((as_utc(at), best))
    return {key: Series(series.runs, thinned(series.points)) for key, series in found.items()}


def thinned(points: list, most: int = MAX_POINTS) -> list:
    """At most ``most`` of ``points``, evenly spread, the first and the last always among them."""
    if len(points) <= most:
        return points
    last = len(points) - 1
    return [points[round(i * last / (most - 1))] for i in range(most)]
