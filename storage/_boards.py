"""Leaderboards managed live: their kept versions, deletion (hidden, or purged with everything under them), and
which version of its problem a submission was judged by."""

from __future__ import annotations

import json
from datetime import datetime

import duckdb

from storage import _writes
from storage._sql import one_row
from storage._time import as_utc
from storage.records import Leaderboard

Cursor = duckdb.DuckDBPyConnection


def save(cur: Cursor, lb: Leaderboard, now: datetime) -> None:
    """Create or update the leaderboard and keep its problem as version ``lb.version`` (once per version)."""
    _writes.upsert_leaderboard(cur, lb)
    cur.execute(
        """INSERT INTO leaderboard_versions (leaderboard, version, problem, problem_sha, created_at, created_by)
           VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING""",
        [lb.name, lb.version, json.dumps(lb.problem), lb.problem_sha, as_utc(now), lb.created_by],
    )


def name_taken(cur: Cursor, name: str) -> bool:
    """Whether a leaderboard, live or deleted (hidden), has this name (case ignored)."""
    return one_row(cur.execute("SELECT count(*) FROM leaderboards WHERE lower(name) = lower(?)", [name]))[0] > 0


def hide(cur: Cursor, name: str, now: datetime) -> None:
    cur.execute("UPDATE leaderboards SET hidden_at = ? WHERE name = ?", [as_utc(now), name])


def deleted_name(cur: Cursor, name: str) -> str | None:
    """The stored name of the deleted (hidden) leaderboard called ``name`` (case ignored), if there is one."""
    row = cur.execute(
        "SELECT name FROM leaderboards WHERE lower(name) = lower(?) AND hidden_at IS NOT NULL", [name]
    ).fetchone()
    return None if row is None else row[0]


def restore(cur: Cursor, name: str) -> None:
    cur.execute("UPDATE leaderboards SET hidden_at = NULL WHERE name = ?", [name])


def purge(cur: Cursor, name: str) -> int:
    """Erase the leaderboard with its versions, submissions, runs and rankings; returns the submissions erased."""
    ids = "SELECT id FROM submissions WHERE leaderboard = $name"
    runs = f"SELECT run_id FROM runs WHERE submission_id IN ({ids})"
    (count,) = one_row(cur.execute(f"SELECT count(*) FROM ({ids})", {"name": name}))
    for statement in (
        f"DELETE FROM shape_results WHERE run_id IN ({runs})",
        f"DELETE FROM runs WHERE submission_id IN ({ids})",
        "DELETE FROM submissions WHERE leaderboard = $name",
        "DELETE FROM personal_bests WHERE leaderboard = $name",
        "DELETE FROM rounds WHERE leaderboard = $name",
        "DELETE FROM leaderboard_versions WHERE leaderboard = $name",
        "DELETE FROM leaderboards WHERE name = $name",
    ):
        cur.execute(statement, {"name": name})
    return count


def submission_version(cur: Cursor, submission_id: int) -> int:
    """The version of its problem in force when the submission arrived (1 for a leaderboard never updated)."""
    row = one_row(
        cur.execute(
            """SELECT max(v.version) FROM submissions s JOIN leaderboard_versions v
               ON v.leaderboard = s.leaderboard AND v.created_at <= s.created_at
           WHERE s.id = ?""",
            [submission_id],
        )
    )
    return row[0] or 1
