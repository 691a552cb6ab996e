"""A runner that evaluates nothing: canned results, optional delay and injected failures.

It stands in for a GPU where the real thing is out of reach or beside the point: the worker's tests,
the throughput benchmark (with ``delay_s=0`` it answers at once), and ``kernelrank up --backend fake``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable

from harness.job import EvalJob
from harness.result import EvalResult, Mode, Progress, Status, SystemInfo, TestResult
from runners.base import ProgressCallback, RunnerUnavailable

TIMED_MODES = (Mode.BENCHMARK, Mode.RANKED)


def passed_result(job: EvalJob) -> EvalResult:
    """Every test passed; timed modes get a score between 50 and 150 us fixed by the source text."""
    digest = int(hashlib.sha256(job.submission_source.encode()).hexdigest()[:8], 16)
    score = 50.0 + digest % 10_000 / 100 if job.mode in TIMED_MODES else None
    tests = [TestResult(spec=spec, passed=True) for spec in job.problem.task.tests]
    return EvalResult(
        status=Status.PASSED,
        mode=job.mode,
        problem=job.problem.name,
        tests=tests,
        score_us=score,
        ranking_by=job.problem.task.ranking_by,
        system=SystemInfo(device="cpu"),
    )


class FakeRunner:
    """Implements ``runners.base.Runner``; counts its calls in ``runs``."""

    name = "fake"

    def __init__(
        self,
        result_for: Callable[[EvalJob], EvalResult] | None = None,
        delay_s: float = 0.0,
        fail_times: int = 0,
        progress_steps: int = 2,
        price_per_s: float | None = None,
    ) -> None:
        self.result_for = result_for or passed_result
        self.price_per_s = price_per_s
        self.delay_s = delay_s
        self.fail_times = fail_times  # the first N runs raise RunnerUnavailable
        self.progress_steps = progress_steps
        self.runs = 0

    async def run(self, job: EvalJob, on_progress: ProgressCallback | None = None) -> EvalResult:
        self.runs += 1
        if self.runs <= self.fail_times:
            raise RunnerUnavailable(f"fake runner: injected failure {self.runs} of {self.fail_times}")
        for step in range(1, self.progress_steps + 1):
            if self.delay_s:
                await asyncio.sleep(self.delay_s / self.progress_steps)
            if on_progress:
                await on_progress(Progress(stage="testing", index=step, total=self.progress_steps))
        if self.delay_s and not self.progress_steps:
            await asyncio.sleep(self.delay_s)
        return self.result_for(job)

    async def backlog(self) -> int:
        return 0

    async def close(self) -> None:
        """Nothing to release."""
