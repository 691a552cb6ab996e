"""Personal API tokens: reads and writes. A token is stored as its SHA-256 only, with a prefix to recognise it by.

Each function runs inside the transaction (or on the cursor) that ``Store`` opened.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from storage._time import as_utc
from storage.records import NewToken, TokenInfo, TokenOwner

Cursor = duckdb.DuckDBPyConnection

_INFO = """SELECT t.prefix, t.person_id, coalesce(p.display_name, ''), t.label, t.created_at::TIMESTAMP,
                  t.last_used_at::TIMESTAMP, t.revoked_at::TIMESTAMP
           FROM api_tokens t LEFT JOIN people p ON p.id = t.person_id"""


def _moment(value: datetime | None) -> datetime | None:
    return value and as_utc(value)


def add(cur: Cursor, token: NewToken) -> None:
    cur.execute(
        "INSERT INTO api_tokens (sha256, prefix, person_id, label, created_at) VALUES (?, ?, ?, ?, ?)",
        [token.sha256, token.prefix, token.person_id, token.label, as_utc(token.created_at)],
    )


def owner(cur: Cursor, sha256: str) -> TokenOwner | None:
    """Who holds the token with this hash (revoked or not); None when no token has it."""
    row = cur.execute(
        """SELECT t.prefix, t.person_id, coalesce(p.display_name, ''), t.revoked_at::TIMESTAMP
                         FROM api_tokens t LEFT JOIN people p ON p.id = t.person_id WHERE t.sha256 = ?""",
        [sha256],
    ).fetchone()
    if row is None:
        return None
    prefix, person_id, display_name, revoked_at = row
    identities = [
        f"{platform}:{user_id}"
        for platform, user_id in cur.execute(
            "SELECT platform, user_id FROM identities WHERE person_id = ? ORDER BY platform, user_id", [person_id]
        ).fetchall()
    ]
    return TokenOwner(
        prefix=prefix,
        person_id=person_id,
        display_name=display_name,
        identities=identities,
        revoked_at=_moment(revoked_at),
    )


def touch(cur: Cursor, sha256: str, now: datetime) -> None:
    cur.execute("UPDATE api_tokens SET last_used_at = ? WHERE sha256 = ?", [as_utc(now), sha256])


def listed(cur: Cursor, person_id: int | None) -> list[TokenInfo]:
    """One person's tokens (every token when ``person_id`` is None), newest first, revoked ones included."""
    rows = cur.execute(
        _INFO + " WHERE $person IS NULL OR t.person_id = $person ORDER BY t.created_at DESC", {"person": person_id}
    ).fetchall()
    return [
        TokenInfo(prefix, owner, name, label, as_utc(created_at), _moment(used_at), _moment(revoked_at))
        for prefix, owner, name, label, created_at, used_at, revoked_at in rows
    ]


def revoke(cur: Cursor, prefix: str, person_id: int | None, now: datetime) -> list[str]:
    """Revoke the live token shown as ``prefix`` (one person's, or anyone's when ``person_id`` is None); returns
    the hashes revoked (prefixes carry 54 random bits, so one at most in practice), so the caller can forget them."""
    rows = cur.execute(
        """UPDATE api_tokens SET revoked_at = $now
                          WHERE prefix = $prefix AND revoked_at IS NULL
                            AND ($person IS NULL OR person_id = $person)
                          RETURNING sha256""",
        {"now": as_utc(now), "prefix": prefix, "person": person_id},
    ).fetchall()
    return [sha for (sha,) in rows]


def revoke_labelled(cur: Cursor, person_id: int, label: str, keep: str, now: datetime) -> None:
    """Revoke a person's live tokens with ``label`` other than ``keep``: a new local token replaces the last one."""
    cur.execute(
        """UPDATE api_tokens SET revoked_at = ? WHERE person_id = ? AND label = ? AND sha256 <> ?
                   AND revoked_at IS NULL""",
        [as_utc(now), person_id, label, keep],
    )
