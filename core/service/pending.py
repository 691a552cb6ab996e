"""Leaderboards waiting for their reference's test run (``core.service.validation``), by run id, in memory."""

from __future__ import annotations

from dataclasses import dataclass

from core.contracts.messages import ReplyTo
from storage.records import Leaderboard


@dataclass(frozen=True)
class Pending:
    leaderboard: Leaderboard        # saved once the reference passes
    action: str                     # "create" or "update", for the answer and the audit log
    reply_to: ReplyTo
    command_id: str
    actor: str


class Validations:
    """Leaderboards waiting for their reference's run, by run id."""

    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._pending

    def add(self, run_id: str, pending: Pending) -> None:
        self._pending[run_id] = pending

    def pop(self, run_id: str) -> Pending | None:
        return self._pending.pop(run_id, None)

    def waiting_for(self, name: str) -> bool:
        return any(p.leaderboard.name.lower() == name.lower() for p in self._pending.values())
