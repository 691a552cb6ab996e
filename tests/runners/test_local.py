"""The local runner: one warm harness server, one job at a time, progress back on the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harness import EvalJob, Mode, Progress, Status, load_problem
from runners.local import LocalRunner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "harness"


def _job(submission: str, mode: Mode = Mode.TEST) -> EvalJob:
    return EvalJob(
        problem=load_problem(FIXTURES / "vectoradd"),
        submission_name=f"{submission}.py",
        submission_source=(FIXTURES / "submissions" / f"{submission}.py").read_text(),
        mode=mode,
    )


@pytest.fixture
async def runner() -> AsyncIterator[LocalRunner]:
    runner = LocalRunner(device="cpu")
    yield runner
    await runner.close()


async def test_runs_jobs_one_after_another_with_their_progress(runner: LocalRunner) -> None:
    assert runner.name == "local"
    stages: list[str] = []

    async def on_progress(progress: Progress) -> None:
        stages.append(progress.stage)

    first = await runner.run(_job("correct"), on_progress)
    second = await runner.run(_job("wrong_output"), on_progress)
    assert (first.status, second.status) == (Status.PASSED, Status.FAILED)
    assert first.system.device == "cpu"
    assert stages == ["starting", "testing", "testing", "testing"] * 2


@pytest.mark.slow
async def test_a_warmed_up_runner_has_its_server_up_before_the_first_job(runner: LocalRunner) -> None:
    assert not runner.warm
    runner.warm_up()
    for _ in range(600):
        if runner.warm:
            break
        await asyncio.sleep(0.1)
    assert runner.warm
    assert (await runner.run(_job("correct"))).status is Status.PASSED


@pytest.mark.slow
async def test_concurrent_runs_take_turns(runner: LocalRunner) -> None:
    order: list[str] = []

    def tagged(tag: str):
        async def on_progress(progress: Progress) -> None:
            order.append(tag)

        return on_progress

    results = await asyncio.gather(
        runner.run(_job("correct"), tagged("a")), runner.run(_job("correct", Mode.BENCHMARK), tagged("b"))
    )
    assert all(r.status is Status.PASSED for r in results)
    switches = sum(1 for before, after in zip(order, order[1:], strict=False) if before != after)
    assert switches == 1, order  # all of one job's events, then all of the other's


@pytest.mark.slow
async def test_cancelling_a_run_stops_it_and_the_runner_goes_on(runner: LocalRunner) -> None:
    looping = asyncio.Event()

    async def on_progress(progress: Progress) -> None:
        if progress.stage == "testing":
            looping.set()

    task = asyncio.create_task(runner.run(_job("infinite_loop"), on_progress))
    await looping.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await runner.run(_job("correct"))).status is Status.PASSED
