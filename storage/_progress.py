"""A person's best score over time, per (leaderboard, GPU), in as many points as a chart can draw.

A best-over-time curve is a step function: it changes only where a run beats every earlier one. So the query keeps
those runs (each new best) and the latest run (where the curve ends), and drops the runs that changed nothing: a
5,000-submission history draws the same chart from a few dozen points. A series with more new bests than
``MAX_POINTS`` keeps that many, evenly spread over it, always its first and its last. One query serves every series
of a person, so a page costs one scan of their runs, not one per series.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from storage._ranking import COUNTS
from storage._time import as_utc
from storage.records import Series

Cursor = duckdb.DuckDBPyConnection
MAX_POINTS = 100  # per series: a chart 640 px wide shows no more

# Each new best (a run below every earlier one: one window, the cheapest), then each series' run count and latest
# run (an aggregate), in one query; ``progress`` puts the latest run's point after the new bests.
_STEPS = f"""
    WITH mine AS (
        SELECT s.leaderboard, r.gpu, s.created_at, s.id, r.score_us
        FROM submissions s JOIN runs r ON r.submission_id = s.id
        WHERE s.person_id = $person_id AND ($leaderboard IS NULL OR s.leaderboard = $leaderboard)
          AND ($gpu IS NULL OR r.gpu = $gpu) AND {COUNTS}),
    marked AS (
        SELECT *, min(score_us) OVER (PARTITION BY leaderboard, gpu ORDER BY created_at, id
                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
        FROM mine)
    SELECT leaderboard, gpu, created_at::TIMESTAMP AS moment, id, score_us, NULL AS runs FROM marked
    WHERE before IS NULL OR score_us < before
    UNION ALL
    SELECT leaderboard, gpu, latest.created_at::TIMESTAMP AS moment, latest.id, NULL, runs
    FROM (SELECT leaderboard, gpu, count(*) AS runs, max({{'created_at': created_at, 'id': id}}) AS latest
          FROM mine GROUP BY ALL)
    ORDER BY leaderboard, gpu, moment, id, runs NULLS FIRST
"""


def progress(
    cur: Cursor, person_id: int, leaderboard: str | None = None, gpu: str | None = None
) -> dict[tuple[str, str], Series]:
    """Each (leaderboard, GPU) series of the person's passed ranked runs (only ``leaderboard`` and ``gpu``'s if
    given), as its new bests and its latest run, at most ``MAX_POINTS`` of them."""
    steps: dict[tuple[str, str], list[tuple[datetime, float, int]]] = {}
    found: dict[tuple[str, str], Series] = {}
    rows = cur.execute(_STEPS, {"person_id": person_id, "leaderboard": leaderboard, "gpu": gpu}).fetchall()
    for board, on, at, submission_id, best, runs in rows:
        series = steps.setdefault((board, on), [])
        if runs is None:  # a new best
            series.append((as_utc(at), best, submission_id))
            continue
        points = [(when, score) for when, score, _ in series]
        if series[-1][2] != submission_id:  # the curve goes on, flat, to the latest run
            points.append((as_utc(at), series[-1][1]))
        found[(board, on)] = Series(runs, thinned(points))
    return found


def thinned(points: list, most: int = MAX_POINTS) -> list:
    """At most ``most`` of ``points``, evenly spread, the first and the last always among them."""
    if len(points) <= most:
        return points
    last = len(points) - 1
    return [points[round(i * last / (most - 1))] for i in range(most)]
