"""What a person's public page shows: their entries with ranks, their runs, and the submission before one.

Each function runs on the cursor ``Store`` opened. A person folded into another by a link has no page of their
own (``None``): everything of theirs is the kept person's now.
"""

from __future__ import annotations

import duckdb

from storage._ranking import ENTRY_ORDER
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
    bests = cur.execute(
        f"""
        WITH ranked AS (
            SELECT *, row_number() OVER (PARTITION BY leaderboard, gpu ORDER BY {", ".join(ENTRY_ORDER)}) AS rank
            FROM personal_bests)
        SELECT leaderboard, gpu, rank, score_us, submission_id FROM ranked WHERE person_id = ?
        ORDER BY leaderboard, gpu""",
        [person_id],
    ).fetchall()
    recent = cur.execute(
        """
        SELECT s.id, s.leaderboard, s.file_name, s.mode, s.created_at::TIMESTAMP, r.gpu, r.status, r.score_us
        FROM submissions s JOIN runs r ON r.submission_id = s.id
        WHERE s.person_id = ? ORDER BY s.id DESC, r.gpu LIMIT ?""",
        [person_id, runs],
    ).fetchall()
    return PersonSummary(
        person_id, row[0], [PersonBest(*b) for b in bests], [PersonRun(*r[:4], as_utc(r[4]), *r[5:]) for r in recent]
    )


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
