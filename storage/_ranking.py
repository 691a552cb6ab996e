"""The ranking rule, written once, and the ranking queries every surface uses.

A run **counts** when its submission's mode is ``ranked``, it passed, it has a score, and an admin has not taken
its submission out of the rankings (``invalid_reason``, kept with the submission) (``COUNTS``).
A person's **entry** on a (leaderboard, GPU) is their counting run with the smallest ``ENTRY_ORDER``:
lowest score, then the earlier submission, then the lower submission id and run id, so the order is total.
Ranks are distinct positions 1, 2, 3, ... in that same order: equal scores rank by submission time.

A **round** of a leaderboard (``rounds``, core.service.rounds) ranks the same way over the runs of the
submissions sent in it (``_ROUND``); all time is the default.

Entries are kept in ``personal_bests`` (one row per leaderboard, GPU and person), updated by ``refresh`` in
the transaction that stores results, so a ranking reads at most one row per person instead of scanning every
run: at 1M runs on 2 cores, a top 10 takes ~5 ms instead of ~30 ms for the same rule evaluated over runs.
``rebuild`` recomputes the table from ``runs`` in SQL (after a bulk import, or when this rule changes); the
tests check that both paths agree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import duckdb

from harness.result import Mode, Status
from storage._sql import one_row, placeholders
from storage._time import as_utc
from storage.records import GpuBest, PreviousBest, RankRow

Cursor = duckdb.DuckDBPyConnection

COUNTS = (
    f"mode = '{Mode.RANKED.value}' AND status = '{Status.PASSED.value}' AND score_us IS NOT NULL "
    "AND invalid_reason IS NULL"
)
ENTRY_ORDER = ("score_us", "submitted_at", "submission_id", "run_id")
_ENTRY_COLUMNS = ("leaderboard", "gpu", "person_id", *ENTRY_ORDER)  # personal_bests, in declared order
_ENTRY_KEY = "{" + ", ".join(f"'{name}': {name}" for name in ENTRY_ORDER) + "}"  # a struct orders like a tuple

# One row per run: its entry columns (in _ENTRY_COLUMNS order) and whether it counts; {where} selects runs.
_RUN_ENTRIES = f"""
    SELECT s.leaderboard, r.gpu, s.person_id, r.score_us, s.created_at AS submitted_at, s.id AS submission_id,
           r.run_id, {COUNTS} AS counts
    FROM runs r JOIN submissions s ON s.id = r.submission_id
    WHERE {{where}}
"""

_RANKING = f"""
    WITH ranked AS (
        SELECT row_number() OVER (ORDER BY {", ".join(ENTRY_ORDER)}) AS rank, *
        FROM {{entries}})
    SELECT rank, person_id, coalesce(p.display_name, ''), score_us, submission_id, run_id, submitted_at::TIMESTAMP
    FROM ranked LEFT JOIN people p ON p.id = ranked.person_id
    WHERE {{chosen}}
"""
# Which rows: ``ranking``'s (the first $top and $people's, or every one; then a page of those), and ``page``'s
# (ranks $offset + 1 to $offset + $limit, and $person's wherever it stands).
_SOME = (
    "($people IS NULL OR list_contains($people, person_id) OR rank <= $top) ORDER BY rank LIMIT $limit OFFSET $offset"
)
_PAGE = "(rank > $offset AND rank <= $offset + $limit) OR person_id = $person ORDER BY rank"

_ALL_TIME = "personal_bests WHERE leaderboard = $leaderboard AND gpu = $gpu"
# A round's entries: the same rule over the runs of the submissions sent in [$since, $until) (a round's ranking is
# one leaderboard's and GPU's runs, not the whole table: personal_bests keeps only each person's best ever).
_ROUND = f"""(
    SELECT * EXCLUDE (counts) FROM ({
    _RUN_ENTRIES.format(
        where="s.leaderboard = $leaderboard AND r.gpu = $gpu "
        "AND ($since IS NULL OR s.created_at >= $since) AND ($until IS NULL OR s.created_at < $until)"
    )
})
    WHERE counts
    QUALIFY row_number() OVER (PARTITION BY person_id ORDER BY {", ".join(ENTRY_ORDER)}) = 1)"""

_CROSS_GPU = f"""
    WITH per_gpu AS (
        SELECT gpu, arg_min(person_id, {_ENTRY_KEY}) AS leader, min(score_us) AS best, count(*) AS people
        FROM personal_bests WHERE leaderboard = $leaderboard GROUP BY gpu),
    offered AS (
        SELECT unnest(gpus) AS gpu, generate_subscripts(gpus, 1) AS position
        FROM leaderboards WHERE name = $leaderboard)
    SELECT coalesce(o.gpu, g.gpu) AS gpu, g.leader, p.display_name, g.best, coalesce(g.people, 0)
    FROM offered o FULL JOIN per_gpu g ON g.gpu = o.gpu
    LEFT JOIN people p ON p.id = g.leader
    ORDER BY o.position NULLS LAST, gpu
"""


Window = tuple[datetime | None, datetime | None] | None  # a round's (since, until); None: all time
Entry = tuple[Any, ...]  # a personal_bests row, in _ENTRY_COLUMNS order
Key = tuple[str, str, int]  # (leaderboard, gpu, person_id)


def refresh(cur: Cursor, run_ids: Sequence[str]) -> dict[Key, Entry | None]:
    """Fold these just-finished runs into their people's entries; returns, for each (leaderboard, GPU, person) one
    of them counts on, the entry as it was before them (None: there was none)."""
    if not run_ids:
        return {}
    rows = cur.execute(_RUN_ENTRIES.format(where=f"r.run_id IN ({placeholders(run_ids)})"), list(run_ids)).fetchall()
    candidates = [row[:-1] for row in rows if row[-1]]
    if not candidates:
        return {}
    keys = {row[:3] for row in candidates}
    people = list({person_id for _, _, person_id in keys})
    current = cur.execute(
        f"SELECT {', '.join(_ENTRY_COLUMNS)} FROM personal_bests WHERE person_id IN ({placeholders(people)})", people
    ).fetchall()
    best: dict[tuple[Any, ...], Entry] = {tuple(row[:3]): tuple(row) for row in current if tuple(row[:3]) in keys}
    before = {key: best.get(key) for key in keys}
    changed = {}
    for row in candidates:
        key = row[:3]
        if key not in best or row[3:] < best[key][3:]:  # entry order: the tuple of ENTRY_ORDER columns
            best[key] = changed[key] = row
    if changed:
        with cur.appender("personal_bests", action="upsert") as appender:
            appender.append_rows(list(changed.values()))
    return before


def previous_entries(cur: Cursor, before: dict[Key, Entry | None]) -> dict[Key, PreviousBest | None]:
    """``refresh``'s entries-before with their runs' shapes, read from each run's stored result: one lookup by key,
    where the shapes' table would be scanned (it has no index on the run alone)."""
    run_ids = [entry[6] for entry in before.values() if entry is not None]
    shapes: dict[str, list[tuple[dict[str, Any], float | None]]] = {}
    if run_ids:
        rows = cur.execute(f"SELECT run_id, result FROM runs WHERE run_id IN ({placeholders(run_ids)})", run_ids)
        for run_id, text in rows.fetchall():
            stored = json.loads(text or "{}")  # a run loaded in bulk may have none
            shapes[run_id] = [(shape["spec"], shape["median_us"]) for shape in stored.get("shapes", [])]
    return {
        key: None if entry is None else PreviousBest(entry[5], entry[6], shapes.get(entry[6], []))
        for key, entry in before.items()
    }


def rebuild(cur: Cursor, people: Sequence[int] | None = None) -> int:
    """Recompute the entries of ``people`` (everyone's when None) from the runs; returns the number of entries.
    Linking two people and unlinking them change whose runs are whose, hence their entries."""
    if people is not None and not people:
        return 0
    # runs have no person_id column: in the run entries it is the submission's
    where, values = ("true", []) if people is None else (f"person_id IN ({placeholders(people)})", list(people))
    cur.execute(f"DELETE FROM personal_bests WHERE {where}", values)
    cur.execute(
        f"""
        INSERT INTO personal_bests
        SELECT leaderboard, gpu, person_id, {", ".join(f"entry.{name}" for name in ENTRY_ORDER)}
        FROM (SELECT leaderboard, gpu, person_id, min({_ENTRY_KEY}) AS entry
              FROM ({_RUN_ENTRIES.format(where=where)})
              WHERE counts GROUP BY ALL)""",
        values,
    )
    (count,) = one_row(cur.execute(f"SELECT count(*) FROM personal_bests WHERE {where}", values))
    return count


def previous_bests(cur: Cursor, keys: Sequence[tuple[str, str, int]], exclude: Sequence[str]) -> list[tuple]:
    """For each (leaderboard, gpu, person), the entry it would have without the ``exclude`` runs, shape by shape:
    rows of (leaderboard, gpu, person_id, submission_id, run_id, spec JSON, median_us), in shape order."""
    if not keys:
        return []
    people = sorted({person_id for _, _, person_id in keys})
    where = f"s.person_id IN ({placeholders(people)})" + (
        f" AND r.run_id NOT IN ({placeholders(exclude)})" if exclude else ""
    )
    values = ", ".join("(?, ?, ?)" for _ in keys)
    return cur.execute(
        f"""
        WITH wanted AS (SELECT * FROM (VALUES {values}) AS w(leaderboard, gpu, person_id)),
        best AS (
            SELECT e.leaderboard, e.gpu, e.person_id, e.submission_id, e.run_id
            FROM ({_RUN_ENTRIES.format(where=where)}) e
            JOIN wanted w ON w.leaderboard = e.leaderboard AND w.gpu = e.gpu AND w.person_id = e.person_id
            WHERE e.counts
            QUALIFY row_number() OVER (PARTITION BY e.leaderboard, e.gpu, e.person_id
                                       ORDER BY {", ".join(ENTRY_ORDER)}) = 1)
        SELECT b.*, sr.spec, sr.median_us FROM best b JOIN shape_results sr ON sr.run_id = b.run_id
        ORDER BY b.run_id, sr.shape_index""",
        [v for key in keys for v in key] + people + list(exclude),
    ).fetchall()


def ranking(
    cur: Cursor,
    leaderboard: str,
    gpu: str,
    limit: int | None = None,
    people: Sequence[int] | None = None,
    top: int = 0,
    window: tuple[datetime | None, datetime | None] | None = None,
    offset: int = 0,
) -> list[RankRow]:
    """Entries on (leaderboard, gpu) by rank; with ``people``, only their rows and the first ``top``. ``window``:
    (since, until), a round's, counts only the submissions sent in it (None on either side: unbounded); None: all
    time. ``offset`` rows are skipped before ``limit``: a page of a board with thousands of people."""
    values = {"limit": limit, "people": None if people is None else list(people), "top": top, "offset": offset}
    return _ranked(cur, leaderboard, gpu, window, _SOME, values)


def page(
    cur: Cursor, leaderboard: str, gpu: str, limit: int, offset: int, window: Window, person_id: int
) -> list[RankRow]:
    """Ranks ``offset`` + 1 to ``offset`` + ``limit``, and ``person_id``'s entry wherever it stands, by rank: a
    page and its asker's own row in one read (``ranking`` for the rest)."""
    return _ranked(cur, leaderboard, gpu, window, _PAGE, {"limit": limit, "offset": offset, "person": person_id})


def _ranked(
    cur: Cursor, leaderboard: str, gpu: str, window: Window, chosen: str, values: dict[str, Any]
) -> list[RankRow]:
    values = {**values, "leaderboard": leaderboard, "gpu": gpu}
    if window is not None:
        values |= {"since": window[0] and as_utc(window[0]), "until": window[1] and as_utc(window[1])}
    entries = _ALL_TIME if window is None else _ROUND
    rows = cur.execute(_RANKING.format(entries=entries, chosen=chosen), values).fetchall()
    return [
        RankRow(rank, person_id, name, score_us, submission_id, run_id, as_utc(submitted_at))
        for rank, person_id, name, score_us, submission_id, run_id, submitted_at in rows
    ]


def cross_gpu(cur: Cursor, leaderboard: str) -> list[GpuBest]:
    """Every GPU the leaderboard offers (in its order), then any other GPU that has entries."""
    return [GpuBest(*row) for row in cur.execute(_CROSS_GPU, {"leaderboard": leaderboard}).fetchall()]
