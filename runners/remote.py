"""What the remote backends (Modal, GitHub) share: call records, deadlines, and answers turned into results.

A remote backend starts one call per run and records it under the run id before it waits; a worker that
restarts finds the record and re-attaches instead of paying for a second run. Records live in the NATS KV
bucket ``runner_calls`` (``core.contracts.bus.Bus.runner_calls``); ``MemoryCalls`` serves one-off callers such as
``kernelrank modal check``. The remote side speaks ``harness.host.remote``'s protocol.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

from core.contracts.bus import BusError
from core.contracts.gpus import KNOWN_POOLS, pool_for
from harness.failures import status_for
from harness.host.remote import AnswerError, read_answer
from harness.job import EvalJob
from harness.result import EvalResult, Failure, FailureKind, Progress

log = logging.getLogger(__name__)
T = TypeVar("T")

# Beyond the mode's own time limit: the container or runner starting, the harness importing torch, and the
# harness server's backstop. A remote call still unanswered after this (plus the time allowed for waiting
# in the provider's queue) is cancelled.
REMOTE_MARGIN_S = 240.0
NOTE_EVERY_S = 30.0  # how often a waiting run tells the user it is still waiting
NOT_YOUR_FAULT = "Your kernel is not to blame; submit again once an admin has fixed it."


class CallStore(Protocol):
    """Where a backend keeps the call it started for each run: a JSON object per run id."""

    async def get(self, run_id: str) -> dict[str, Any] | None: ...

    async def put(self, run_id: str, record: dict[str, Any]) -> None: ...

    async def delete(self, run_id: str) -> None: ...


class MemoryCalls:
    """A ``CallStore`` in memory, for callers that never restart mid-call (``kernelrank modal check``)."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}

    async def get(self, run_id: str) -> dict[str, Any] | None:
        return self.records.get(run_id)

    async def put(self, run_id: str, record: dict[str, Any]) -> None:
        self.records[run_id] = record

    async def delete(self, run_id: str) -> None:
        self.records.pop(run_id, None)


async def quietly(operation: Awaitable[T]) -> T | None:
    """Run a call-store operation; a bus hiccup must not fail the run, it only costs the re-attach."""
    try:
        return await operation
    except BusError as exc:
        log.warning("call store unavailable (%s): this run cannot be re-attached after a restart", exc)
        return None


def job_time_limit_s(job: EvalJob) -> int:
    """How long one attempt may run on the remote machine: the mode's limit plus the margin."""
    return int(job.problem.task.timeout_s(job.mode) + REMOTE_MARGIN_S)


def give_up_at(job: EvalJob, started_at: float, queue_timeout_s: float) -> float:
    """The Unix time after which a call started at ``started_at`` is cancelled: its limit plus queueing."""
    return started_at + job_time_limit_s(job) + queue_timeout_s


def waiting(where: str, since: float) -> Progress:
    """A progress note for a run that waits on a remote machine (``since``: Unix time the call started)."""
    minutes = int((time.time() - since) // 60)
    return Progress(stage="waiting", detail=f"{where}, {minutes} min so far" if minutes else where)


def failure(job: EvalJob, kind: FailureKind, message: str, log_tail: str = "") -> EvalResult:
    """A result for a run the remote side could not evaluate; the message is shown to the user as it is."""
    return EvalResult(
        status=status_for(kind),
        mode=job.mode,
        problem=job.problem.name,
        ranking_by=job.problem.task.ranking_by,
        failure=Failure(kind=kind, message=message, log_tail=log_tail),
    )


def result_from_answer(job: EvalJob, pool: str, data: Any, where: str) -> EvalResult:
    """The result in a remote answer, with the GPU the machine saw and the seconds it held it.

    ``where`` names the runner for messages ("Modal", "the GitHub runner"). A run on another GPU type than
    its pool's is not a result: its timing would rank on the wrong board.
    """
    try:
        answer = read_answer(data)
    except AnswerError as exc:
        return failure(
            job,
            FailureKind.HARNESS_ERROR,
            f"{where} sent back something kernelrank cannot read ({exc}). " + NOT_YOUR_FAULT,
        )
    if answer.result is None:
        return failure(
            job,
            FailureKind.HARNESS_ERROR,
            f"{where} could not evaluate this submission: {answer.error}. {NOT_YOUR_FAULT}",
            answer.detail,
        )
    if mismatch := wrong_gpu(pool, answer.gpu_name):
        return failure(job, FailureKind.HARNESS_ERROR, f"{mismatch} {NOT_YOUR_FAULT}")
    result = answer.result
    if answer.gpu_name and not result.system.gpu_name and job.device != "cpu":
        result.system.gpu_name = answer.gpu_name
    result.gpu_s = answer.elapsed_s  # the machine was held for the whole answer, not only the timed part
    return result


def wrong_gpu(pool: str, seen: str) -> str:
    """Why a machine with GPU ``seen`` cannot serve ``pool``, or "" when it can (or there is no way to tell)."""
    if not seen or pool not in KNOWN_POOLS or pool_for(seen) == pool:
        return ""
    return (
        f"This run was placed on an {seen} instead of an {pool}, so its timing cannot count on the {pool} leaderboard."
    )
