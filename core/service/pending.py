"""Runs the core waits for outside any submission, by run id, in memory: leaderboards waiting for their reference's
test run (``core.service.validation``), the podium's re-runs at a challenge's close (``core.service.podium``) and
the reference's timed runs (``core.service.reference_timing``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from core.contracts.messages import ReplyTo, RunResult
from storage.records import Leaderboard


@dataclass(frozen=True)
class Pending:
    leaderboard: Leaderboard  # saved once the reference passes
    action: str  # "create" or "update", for the answer and the audit log
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


class Reruns:
    """Re-runs of ranked runs whose results a coroutine awaits."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[RunResult]] = {}

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._waiting

    def expect(self, run_id: str) -> asyncio.Future[RunResult]:
        future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        self._waiting[run_id] = future
        return future

    def arrived(self, result: RunResult) -> None:
        future = self._waiting.pop(result.run_id, None)
        if future is not None and not future.done():
            future.set_result(result)

    def forget(self, run_id: str) -> None:
        future = self._waiting.pop(run_id, None)
        if future is not None:
            future.cancel()


class ReferenceRuns:
    """The reference's timed runs, by run id: each for a (leaderboard, problem version, GPU)."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[str, int, str]] = {}

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._pending

    def add(self, run_id: str, key: tuple[str, int, str]) -> None:
        self._pending[run_id] = key

    def pop(self, run_id: str) -> tuple[str, int, str] | None:
        return self._pending.pop(run_id, None)

    def waiting_for(self, key: tuple[str, int, str]) -> bool:
        return key in self._pending.values()
