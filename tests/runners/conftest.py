"""Fixtures for the runner backends: jobs, a bus with job queues and results, a clean environment for the Modal body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from worker_testkit import hand_out_jobs

from core.contracts.bus import Bus
from core.contracts.messages import RunJob, RunResult, new_id
from harness.job import EvalJob
from harness.loading import load_problem
from harness.result import Mode
from runners import modal_app

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "harness"


def _eval_job(submission: str = "correct", *, mode: Mode = Mode.TEST, device: str = "cpu") -> EvalJob:
    return EvalJob(
        problem=load_problem(FIXTURES / "vectoradd"),
        submission_name=f"{submission}.py",
        submission_source=(FIXTURES / "submissions" / f"{submission}.py").read_text(),
        mode=mode,
        device=device,
        run_id=new_id(),
    )


def _run_job(gpu: str = "CPU", submission: str = "correct", **options) -> RunJob:
    job = _eval_job(submission, **options)
    return RunJob(run_id=job.run_id, submission_id=7, leaderboard="vectoradd", gpu=gpu, job=job)


@pytest.fixture
def eval_job() -> Callable[..., EvalJob]:
    """``eval_job("correct", mode=Mode.TEST, device="cpu")``: a job for the fixture vectoradd problem."""
    return _eval_job


@pytest.fixture
def run_job() -> Callable[..., RunJob]:
    """``run_job(gpu="CPU", submission="correct", ...)``: the same job as a RunJob for a pool's queue."""
    return _run_job


@pytest.fixture
def cache_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Modal body points the compile caches at per-job copies; put this process's environment back after."""
    for name in modal_app.CACHE_DIRS.values():
        monkeypatch.delenv(name, raising=False)


class Results:
    """Every RunResult the workers publish, read through the core's own durable consumer."""

    def __init__(self) -> None:
        self.items: list[RunResult] = []
        self.arrived = asyncio.Condition()

    async def on_results(self, results: list[RunResult]) -> None:
        async with self.arrived:
            self.items.extend(results)
            self.arrived.notify_all()

    async def wait(self, n: int, timeout_s: float = 60) -> list[RunResult]:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.items) >= n), timeout_s)
        return self.items


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[Bus]:
    """A bus with kernelrank's streams, job queues for H100 and CPU (ack_wait 1 s, 3 deliveries), the KV bucket."""
    bus = await Bus.connect(nats_url, name="runners-test")
    await bus.ensure_streams(["H100", "CPU"], ack_wait_s=1.0, max_deliver=3)
    await hand_out_jobs(bus, ["H100", "CPU"])  # workers get jobs from the core: this is its part of that
    yield bus
    await bus.close()


@pytest.fixture
async def results(bus: Bus) -> AsyncIterator[Results]:
    seen = Results()
    async with await bus.consume_results(seen.on_results, poll_s=0.2):
        yield seen
