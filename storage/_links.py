"""One person across platforms: linking folds one person into another, unlinking moves back what a link moved.

A link moves the joined person's identities, submissions and live tokens to the kept person and records exactly
which rows it moved (``person_links``), so that undoing it gives back those rows and no others: what the joined
accounts did while linked (new submissions, new tokens) stays with the kept person. The joined person's row stays,
so their old person id (in links, in the audit log) still means them. Both people's ranking entries are rebuilt,
since whose runs are whose changed. Each function runs inside the transaction ``Store`` opened.
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb

from storage import _ranking
from storage._sql import placeholders

Cursor = duckdb.DuckDBPyConnection


def link(cur: Cursor, kept: int, joined: int, now: datetime) -> None:
    """Fold ``joined`` into ``kept``: one person with both people's identities, submissions and tokens."""
    identities = cur.execute(
        "SELECT platform, user_id FROM identities WHERE person_id = ? ORDER BY ALL", [joined]
    ).fetchall()
    submissions = [
        row[0] for row in cur.execute("SELECT id FROM submissions WHERE person_id = ? ORDER BY id", [joined]).fetchall()
    ]
    tokens = [
        row[0]
        for row in cur.execute(
            "SELECT sha256 FROM api_tokens WHERE person_id = ? AND revoked_at IS NULL ORDER BY sha256", [joined]
        ).fetchall()
    ]
    cur.execute(
        """INSERT INTO person_links (kept_person_id, joined_person_id, identities, submissions, tokens,
                   created_at) VALUES (?, ?, ?, ?, ?, ?)""",
        [kept, joined, json.dumps([list(i) for i in identities]), json.dumps(submissions), json.dumps(tokens), now],
    )
    _move(cur, joined, kept, [tuple(i) for i in identities], submissions, tokens)


def unlink(
    cur: Cursor, person_id: int, identity: tuple[str, str] | None, token_sha: str | None, now: datetime
) -> list[tuple[int, int]]:
    """Undo links of ``person_id``: the one that brought ``identity`` (or the token) in, if one did; otherwise
    every link that folded someone into this person. Returns the (kept, joined) pairs split, newest first."""
    rows = cur.execute(
        """SELECT id, kept_person_id, joined_person_id, identities, submissions, tokens
                          FROM person_links WHERE kept_person_id = ? AND undone_at IS NULL ORDER BY id DESC""",
        [person_id],
    ).fetchall()
    links = [
        (link_id, kept, joined, [tuple(i) for i in json.loads(ids)], json.loads(subs), json.loads(toks))
        for link_id, kept, joined, ids, subs, toks in rows
    ]
    brought = [entry for entry in links if (identity and identity in entry[3]) or (token_sha and token_sha in entry[5])]
    undone = brought[:1] or links
    for link_id, kept, joined, identities, submissions, tokens in undone:
        _move(cur, kept, joined, identities, submissions, tokens)
        cur.execute("UPDATE person_links SET undone_at = ? WHERE id = ?", [now, link_id])
    return [(kept, joined) for _, kept, joined, *_ in undone]


def identities(cur: Cursor, person_id: int) -> list[tuple[str, str, str]]:
    """(platform, user id, display name) of a person's identities."""
    return cur.execute(
        "SELECT platform, user_id, display_name FROM identities WHERE person_id = ? ORDER BY ALL", [person_id]
    ).fetchall()


def _move(
    cur: Cursor, source: int, target: int, identities: list[tuple[str, str]], submissions: list[int], tokens: list[str]
) -> None:
    """Move the listed rows that ``source`` still holds to ``target``, and rebuild both people's entries."""
    for platform, user_id in identities:
        cur.execute(
            "UPDATE identities SET person_id = ? WHERE platform = ? AND user_id = ? AND person_id = ?",
            [target, platform, user_id, source],
        )
    if submissions:
        cur.execute(
            f"UPDATE submissions SET person_id = ? WHERE person_id = ? AND id IN ({placeholders(submissions)})",
            [target, source, *submissions],
        )
    if tokens:
        cur.execute(
            f"UPDATE api_tokens SET person_id = ? WHERE person_id = ? AND sha256 IN ({placeholders(tokens)})",
            [target, source, *tokens],
        )
    _ranking.rebuild(cur, [source, target])
