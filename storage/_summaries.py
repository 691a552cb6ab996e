"""Summaries kept beside the history so that pages listing leaderboards cost what they show, not what was ever
submitted: each (leaderboard, person)'s number of submissions, in ``board_people``.

``list_leaderboards`` (the home page, ``kernelrank list``, ``/v1/health``) reads these rows instead of joining every
submission: at 1M runs that join alone took 329 ms. Every write that adds, moves or erases submissions keeps them
current in its own transaction: ``count_new`` (new submissions), ``recount`` (a link or unlink moved some between
people; a bulk import), and a purge deletes its leaderboard's rows (``storage/_boards.py``). Invalidation and
hiding change no count: a listed count includes invalidated submissions, and a hidden leaderboard is not listed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import duckdb

from storage._sql import placeholders

Cursor = duckdb.DuckDBPyConnection

# Migration statements (storage/_schema.py): the table, filled from the submissions a file already holds.
CREATE = (
    """CREATE TABLE board_people (
        leaderboard VARCHAR NOT NULL,
        person_id BIGINT NOT NULL,
        submissions BIGINT NOT NULL,
        PRIMARY KEY (leaderboard, person_id))""",
    "INSERT INTO board_people SELECT leaderboard, person_id, count(*) FROM submissions GROUP BY ALL",
)

# Per listed leaderboard: submissions and distinct people, from the summary rows.
BOARD_COUNTS = """SELECT leaderboard, sum(submissions)::BIGINT AS submissions, count(*) AS people
                  FROM board_people GROUP BY leaderboard"""


def count_new(cur: Cursor, stored: Iterable[tuple[str, int]]) -> None:
    """Add the new submissions, given as their (leaderboard, person_id), to the counts."""
    counts = Counter(stored)
    if not counts:
        return
    boards, people = zip(*counts, strict=True)
    cur.execute(
        """INSERT INTO board_people SELECT unnest($boards), unnest($people), unnest($counts)
           ON CONFLICT (leaderboard, person_id) DO UPDATE SET submissions = submissions + EXCLUDED.submissions""",
        {"boards": list(boards), "people": list(people), "counts": list(counts.values())},
    )


def recount(cur: Cursor, people: Sequence[int] | None = None) -> None:
    """Count the submissions of ``people`` (everyone's when None) again from the submissions table."""
    where, values = ("true", []) if people is None else (f"person_id IN ({placeholders(people)})", list(people))
    cur.execute(f"DELETE FROM board_people WHERE {where}", values)
    cur.execute(
        f"INSERT INTO board_people SELECT leaderboard, person_id, count(*) FROM submissions WHERE {where} GROUP BY ALL",
        values,
    )
