"""The promise behind a submission's answer, and what keeps it when NATS or the core fails midway.

**Accepted** means the submission is stored and every one of its jobs is durable in JetStream (the stream
acknowledged it). **Refused** means nothing was stored, or what was stored is *withdrawn*: its runs are
done with a failure saying they were never queued, and they are never evaluated or answered again.

- A job whose publish cannot be confirmed (NATS unreachable for ``PUBLISH_CONFIRM_S``, the queue full, the
  job too large) withdraws the whole submission, and the sender is told it was not queued.
- A command is handled once: a repeat that arrives while the first is still being handled (a client that
  sent it again after its connection dropped) waits for the first and gets the same answer; a later repeat
  is answered from what is stored (the command id is the submission's key), so a sender who asks again
  learns the truth.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from core.contracts.bus import BusError, PayloadTooLarge, QueueFull
from core.contracts.errors import UserError
from core.contracts.messages import Reply, RunJob
from core.service.db import Writer
from harness.result import EvalResult, Failure, FailureKind, Mode, Status
from storage.records import ResultRecord, SubmissionDetail

log = logging.getLogger(__name__)

NOT_QUEUED = "kernelrank (not queued)"  # the worker of a withdrawn run: never evaluated


class OncePerCommand:
    """Runs the handler of each command id once at a time; a repeat meanwhile shares the first one's outcome."""

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[Reply]] = {}

    async def run(self, command_id: str, handle: Callable[[], Awaitable[Reply]]) -> Reply:
        pending = self._pending.get(command_id)
        if pending is not None:
            return await asyncio.shield(pending)
        outcome: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[command_id] = outcome
        try:
            reply = await handle()
        except BaseException as exc:
            outcome.set_exception(exc)
            outcome.exception()  # retrieved: nobody else may be waiting, and that is fine
            raise
        finally:
            del self._pending[command_id]
        outcome.set_result(reply)
        return reply


async def queue_jobs(
    jobs: Sequence[RunJob], publish_job: Callable[[RunJob], Awaitable[bool]], writer: Writer, now: datetime
) -> None:
    """Publish every job, each confirmed by JetStream; if one cannot be, withdraw them all and refuse."""
    try:
        for job in jobs:
            await publish_job(job)
    except BusError as exc:
        log.error("submission #%d could not be queued on %s: %s", jobs[0].submission_id, job.gpu, exc)
        await withdraw(jobs, writer, now)
        raise UserError(_refusal(exc, job.gpu)) from exc


async def withdraw(jobs: Sequence[RunJob], writer: Writer, now: datetime) -> None:
    """Close the runs of a refused submission: done, failed, answered (the refusal is the answer)."""
    message = "This run was never queued: kernelrank refused the submission when it arrived. Submit it again."
    await writer.results(
        [
            ResultRecord(
                run_id=job.run_id,
                worker=NOT_QUEUED,
                attempts=0,
                finished_at=now,
                replied=True,
                result=EvalResult(
                    status=Status.ERROR,
                    mode=Mode(job.job.mode),
                    problem=job.leaderboard,
                    failure=Failure(kind=FailureKind.HARNESS_ERROR, message=message),
                ),
            )
            for job in jobs
        ]
    )


def withdrawn(detail: SubmissionDetail | None) -> bool:
    """Whether a stored submission was refused after it was stored."""
    return detail is not None and any(run.worker == NOT_QUEUED for run in detail.runs)


REFUSED_AGAIN = (
    "This submission was refused when it first arrived (kernelrank could not queue it), and nothing "
    "of it runs. Submit it again."
)


def _refusal(exc: BusError, gpu: str) -> str:
    if isinstance(exc, QueueFull):
        return f"The {gpu} queue is full, so nothing was queued. Try again once it has moved on (`queue` shows it)."
    if isinstance(exc, PayloadTooLarge):
        return (
            "This submission with its problem's files is larger than kernelrank's message bus carries, so "
            "nothing was queued. Make the file smaller and submit again."
        )
    return (
        "kernelrank could not queue this submission because its message bus is reconnecting; nothing was "
        "queued. Submit again in a few seconds."
    )
