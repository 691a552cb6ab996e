"""What a person's public page shows: their entries with ranks, their progress, their runs, and the submission
before one. A page costs five queries whatever the person's history holds.

Each function runs on the cursor ``Store`` opened. A person folded into another by a link has no page of their
own (``None``): everything of theirs is the kept person's now.
"""

from __future__ import annotations

import duckdb

from storage import _progress
from storage._ranking import ENTRY_ORDER
from storage._sql import placeholders
from storage._time import as_utc
from storage.records import PersonBest, PersonRun, PersonSummary

Cursor = duckdb.DuckDBPyConnection


def summary(cur: Cursor, person_id: int, runs: int) -> PersonSummary | None:
    row = cur.execute(
        """SELECT display_name FROM people WHERE id = ?
                         AND id NOT IN (SELECT joined_person_id FROM person_links WHERE undone_at IS NULL)""",
        [person_id],
    ).fetchone()
    if row is None:
        return None
    # A rank is 1 + the entries ahead on the same board: a join on the person's own entries, not a window over all.
    bests = cur.execute(
        f"""
        SELECT b.leaderboard, b.gpu, 1 + count(o.person_id), b.score_us, b.submission_id
        FROM personal_bests b LEFT JOIN personal_bests o
          ON o.leaderboard = b.leaderboard AND o.gpu = b.gpu AND {_entry("o")} < {_entry("b")}
        WHERE b.person_id = ?
        GROUP BY ALL ORDER BY b.leaderboard, b.gpu""",
        [person_id],
    ).fetchall()
    # The latest submissions first, then their runs: runs are stored in submission order, so the lower bound on
    # submission_id lets DuckDB skip every older row group instead of joining all runs.
    latest = [i for (i,) in cur.execute(_LATEST, [person_id, runs]).fetchall()]
    recent = (
        cur.execute(
            f"""
            SELECT s.id, s.leaderboard, s.file_name, s.mode, s.created_at::TIMESTAMP, r.gpu, r.status, r.score_us
            FROM submissions s JOIN runs r ON r.submission_id = s.id
            WHERE s.id IN ({placeholders(latest)}) AND r.submission_id >= ?
            ORDER BY s.id DESC, r.gpu LIMIT ?""",
            [*latest, min(latest), runs],
        ).fetchall()
        if latest
        else []
    )
    return PersonSummary(
        person_id,
        row[0],
        [PersonBest(*b) for b in bests],
        [
            PersonRun(submission_id, leaderboard, file_name, mode, as_utc(created_at), gpu, status, score_us)
            for submission_id, leaderboard, file_name, mode, created_at, gpu, status, score_us in recent
        ],
        _progress.progress(cur, person_id),
    )


_LATEST = "SELECT id FROM submissions WHERE person_id = ? ORDER BY id DESC LIMIT ?"


def _entry(alias: str) -> str:
    """An entry's place in ranking order as one comparable struct (``ENTRY_ORDER``)."""
    return "{" + ", ".join(f"'{name}': {alias}.{name}" for name in ENTRY_ORDER) + "}"


def previous(cur: Cursor, submission_id: int) -> tuple[int, str, str] | None:
    """(id, file name, source) of the same author's submission to the same leaderboard just before this one."""
    return cur.execute(
        """
        SELECT p.id, p.file_name, c.source
        FROM submissions s JOIN submissions p ON p.person_id = s.person_id AND p.leaderboard = s.leaderboard
                                              AND p.id < s.id
        JOIN code_blobs c ON c.sha256 = p.code_sha
        WHERE s.id = ? ORDER BY p.id DESC LIMIT 1""",
        [submission_id],
    ).fetchone()
