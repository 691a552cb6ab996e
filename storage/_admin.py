"""What admins keep from chat: people's roles, bans, a person's own rate limit, submissions taken out of every
ranking, and reads of the audit log. ``Store.admin`` is an ``AdminRecords`` on the store's cursors and locks."""

from __future__ import annotations

import json
import threading
from datetime import datetime
from typing import Any

from storage import _ranking
from storage._part import StorePart
from storage._time import as_utc


class AdminRecords(StorePart):
    """Bans are also kept in memory, read once: every submission asks for its author's, and only this object
    writes them (the core alone opens the file), so the copy stays exact and a submission costs no query for it."""

    def __init__(self, *parts: Any) -> None:
        super().__init__(*parts)
        self._bans: dict[int, str] | None = None
        self._bans_lock = threading.Lock()  # a first read and a ban at once: the ban is not lost

    def grant(self, person_id: int, role: str, now: datetime) -> None:
        with self._writing() as cur:
            cur.execute("INSERT INTO roles VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [person_id, role, as_utc(now)])

    def revoke(self, person_id: int, role: str) -> bool:
        """Whether the person had the role."""
        with self._writing() as cur:
            return bool(
                cur.execute(
                    "DELETE FROM roles WHERE person_id = ? AND role = ? RETURNING person_id", [person_id, role]
                ).fetchall()
            )

    def roles(self) -> dict[int, frozenset[str]]:
        with self._reading() as cur:
            rows = cur.execute("SELECT person_id, list(role) FROM roles GROUP BY person_id").fetchall()
        return {person_id: frozenset(roles) for person_id, roles in rows}

    def ban(self, person_id: int, reason: str, now: datetime) -> None:
        with self._writing() as cur:
            cur.execute(
                """INSERT INTO bans VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET reason = excluded.reason,
                           banned_at = excluded.banned_at""",
                [person_id, reason, as_utc(now)],
            )
        with self._bans_lock:
            self._banned()[person_id] = reason

    def unban(self, person_id: int) -> bool:
        with self._writing() as cur:
            found = bool(
                cur.execute("DELETE FROM bans WHERE person_id = ? RETURNING person_id", [person_id]).fetchall()
            )
        with self._bans_lock:
            self._banned().pop(person_id, None)
        return found

    def ban_of(self, person_id: int) -> str | None:
        """Why the person is banned; None when they are not."""
        with self._bans_lock:
            return self._banned().get(person_id)

    def _banned(self) -> dict[int, str]:
        """The bans by person (loaded on first use); callers hold ``_bans_lock``."""
        if self._bans is None:
            with self._reading() as cur:
                self._bans = dict(cur.execute("SELECT person_id, reason FROM bans").fetchall())
        return self._bans

    def set_limit(self, person_id: int, per_minute: int) -> None:
        with self._writing() as cur:
            cur.execute(
                """INSERT INTO rate_limits VALUES (?, ?) ON CONFLICT DO UPDATE
                           SET per_minute = excluded.per_minute""",
                [person_id, per_minute],
            )

    def limits(self) -> dict[int, int]:
        with self._reading() as cur:
            return dict(cur.execute("SELECT person_id, per_minute FROM rate_limits").fetchall())

    def set_board_limit(self, leaderboard: str, per_minute: int) -> None:
        with self._writing() as cur:
            cur.execute(
                """INSERT INTO leaderboard_rate_limits VALUES (?, ?) ON CONFLICT DO UPDATE
                           SET per_minute = excluded.per_minute""",
                [leaderboard, per_minute],
            )

    def board_limits(self) -> dict[str, int]:
        with self._reading() as cur:
            return dict(cur.execute("SELECT leaderboard, per_minute FROM leaderboard_rate_limits").fetchall())

    def invalidate(self, submission_id: int, reason: str) -> bool:
        """Take the submission out of every ranking (it stays, marked with ``reason``); False if there is none."""
        with self._writing("outcomes") as cur:  # the rankings' lane: entries are recomputed in it
            found = cur.execute(
                "UPDATE submissions SET invalid_reason = ? WHERE id = ? RETURNING id", [reason, submission_id]
            ).fetchall()
            if found:
                _ranking.rebuild(cur)
        return bool(found)

    def invalid_reason(self, submission_id: int) -> str | None:
        with self._reading() as cur:
            row = cur.execute("SELECT invalid_reason FROM submissions WHERE id = ?", [submission_id]).fetchone()
        return None if row is None else row[0]

    def audit(self, since: datetime, limit: int = 50) -> list[tuple[datetime, str, str, dict[str, Any]]]:
        """(when, who, what, detail) of the audit log since ``since``, newest first."""
        with self._reading() as cur:
            rows = cur.execute(
                """SELECT created_at::TIMESTAMP, actor, action, detail FROM audit_log
                                  WHERE created_at >= ? ORDER BY id DESC LIMIT ?""",
                [as_utc(since), limit],
            ).fetchall()
        return [(as_utc(at), actor, action, json.loads(detail)) for at, actor, action, detail in rows]
