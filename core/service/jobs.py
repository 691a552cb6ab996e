"""Building RunJobs from stored facts (for fresh submissions and for re-queueing after a restart), and queueing
them."""

from __future__ import annotations

from core.contracts.bus import Bus
from core.contracts.gpus import CPU_POOL
from core.contracts.messages import RunJob
from core.service.leaderboards import Board
from harness.job import EvalJob
from harness.result import Mode


def run_job(
    board: Board, *, run_id: str, gpu: str, submission_id: int, file_name: str, source: str, mode: str
) -> RunJob:
    """One evaluation of a submission on one GPU pool; the problem's files travel with it.

    Only a ranked run carries the leaderboard's secret seed: a test, benchmark or profile run (whose inputs
    the user may see) must not hand it to anything outside the core.
    """
    ranked = Mode(mode) is Mode.RANKED
    job = EvalJob(
        problem=board.problem,
        submission_name=file_name,
        submission_source=source,
        mode=Mode(mode),
        device="cpu" if gpu == CPU_POOL else "cuda",
        secret_seed=board.leaderboard.secret_seed if ranked else None,
        run_id=run_id,
    )
    return RunJob(run_id=run_id, submission_id=submission_id, leaderboard=board.leaderboard.name, gpu=gpu, job=job)


class JobQueue:
    """Queues jobs, which carry no result key: the core adds the key of one attempt when it hands that attempt to
    one worker (``core.service.dispatch``). The keys derive from the core's secret, which never leaves this
    process; only the core reads the job queues (``core.contracts.roles``)."""

    def __init__(self, bus: Bus, secret: bytes) -> None:
        self._bus, self._secret = bus, secret

    @property
    def secret(self) -> bytes:
        """The core's secret, for checking what comes back (``core.service.worker_reports``)."""
        return self._secret

    async def publish(self, job: RunJob) -> bool:
        return await self._bus.publish_job(job)
