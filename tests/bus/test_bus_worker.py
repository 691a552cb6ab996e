"""The runner worker against a real nats-server: progress, result, ack, retries, crashes, heartbeats."""

import asyncio
from collections.abc import AsyncIterator

import pytest
from worker_testkit import hand_out_jobs, running

from core.contracts import subjects
from core.contracts.bus import Bus
from core.contracts.messages import RunProgress, RunResult
from harness.job import EvalJob
from harness.result import EvalResult, FailureKind, Status
from runners.fake import FakeRunner
from runners.worker import STARTED, Worker

GPU = "CPU"


class Events:
    """Everything workers report, in arrival order, read through the core's own durable consumers."""

    def __init__(self) -> None:
        self.progress: list[RunProgress] = []
        self.results: list[RunResult] = []
        self.arrived = asyncio.Condition()

    async def on_progress(self, events: list[RunProgress]) -> None:
        self.progress.extend(events)

    async def on_results(self, results: list[RunResult]) -> None:
        async with self.arrived:
            self.results.extend(results)
            self.arrived.notify_all()

    async def count_progress(self, n: int) -> bool:
        return len(self.progress) >= n

    async def wait_results(self, n: int, timeout_s: float = 20) -> list[RunResult]:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.results) >= n), timeout_s)
        return self.results


@pytest.fixture
async def events(bus: Bus) -> AsyncIterator[Events]:
    seen = Events()
    async with (
        await bus.consume_progress(seen.on_progress, poll_s=0.2),
        await bus.consume_results(seen.on_results, poll_s=0.2),
    ):
        yield seen


async def drained(js) -> bool:
    """No job stored and none in flight: nothing is left that could produce another result."""
    info = await js.consumer_info(subjects.JOBS, subjects.runner_durable(GPU))
    return (await js.stream_info(subjects.JOBS)).state.messages == 0 and info.num_ack_pending == 0


async def test_happy_path_progress_then_result_then_ack(bus: Bus, events: Events, js, make_job, eventually) -> None:
    job = make_job()
    await bus.publish_job(job)
    async with running(Worker(bus, GPU, FakeRunner(progress_steps=2), name="w1")):
        (result,) = await events.wait_results(1)

        await eventually(lambda: drained(js))
        await eventually(lambda: events.count_progress(3))
    assert (result.run_id, result.worker, result.attempts) == (job.run_id, "w1", 1)
    assert result.result.status is Status.PASSED
    assert [(p.progress.stage, p.progress.index) for p in events.progress] == [
        (STARTED, 0),
        ("testing", 1),
        ("testing", 2),
    ]
    # Progress was stored before the result: the result is the last event of the run in EVENTS.
    last = await js.get_last_msg(subjects.EVENTS, subjects.result_subject("w1", job.run_id))
    first_progress = await js.get_msg(subjects.EVENTS, 1)
    assert first_progress.subject == subjects.progress_subject("w1", job.run_id) and last.seq > first_progress.seq


async def test_an_unavailable_runner_gives_the_job_back(bus: Bus, events: Events, make_job) -> None:
    runner = FakeRunner(fail_times=1)
    await bus.publish_job(make_job())
    async with running(Worker(bus, GPU, runner, retry_delay_s=0.1)):
        (result,) = await events.wait_results(1)
    assert result.attempts == 2 and result.result.passed
    assert runner.runs == 2


async def test_a_failing_runner_becomes_an_error_result_and_the_worker_goes_on(
    bus: Bus, events: Events, js, make_job, eventually
) -> None:
    def explode_once(job: EvalJob) -> EvalResult:
        if "explode" in job.submission_source:
            raise RuntimeError("runner bug")
        return FakeRunner().result_for(job)

    bad, good = make_job(source="# explode"), make_job()
    await bus.publish_job(bad)
    await bus.publish_job(good)
    async with running(Worker(bus, GPU, FakeRunner(result_for=explode_once))):
        results = {r.run_id: r for r in await events.wait_results(2)}
    failure = results[bad.run_id].result.failure
    assert results[bad.run_id].result.status is Status.ERROR
    assert failure is not None and failure.kind is FailureKind.HARNESS_ERROR
    assert "not a problem with your kernel" in failure.message
    assert results[bad.run_id].attempts == 1  # acked, not retried
    assert results[good.run_id].result.passed
    await eventually(lambda: drained(js))


@pytest.mark.slow
async def test_heartbeats_keep_a_long_job_from_being_redelivered(
    bus: Bus, events: Events, nats_url: str, make_job
) -> None:
    # The job runs 3x ack_wait (1 s). Without heartbeats the second worker would get it as well.
    started = asyncio.Event()

    class Slow(FakeRunner):
        async def run(self, job, on_progress=None):
            started.set()
            return await super().run(job, on_progress)

    slow, spare = Slow(delay_s=3.0), FakeRunner()
    other = await Bus.connect(nats_url, name="second")
    try:
        await bus.publish_job(make_job())
        async with running(Worker(bus, GPU, slow)):
            await asyncio.wait_for(started.wait(), 10)
            async with running(Worker(other, GPU, spare, poll_s=0.2)):
                (result,) = await events.wait_results(1)
    finally:
        await other.close()
    assert result.attempts == 1
    assert (slow.runs, spare.runs) == (1, 0)


async def test_concurrency_runs_jobs_side_by_side(bus: Bus, events: Events, make_job) -> None:
    both_running = asyncio.Barrier(2)

    class MeetingRunner(FakeRunner):
        async def run(self, job, on_progress=None):
            await asyncio.wait_for(both_running.wait(), 10)  # times out if jobs ran one after another
            return await super().run(job, on_progress)

    await bus.publish_job(make_job())
    await bus.publish_job(make_job())
    async with running(Worker(bus, GPU, MeetingRunner(), concurrency=2)):
        results = await events.wait_results(2)
    assert all(r.result.passed for r in results)


async def test_a_stopping_worker_gives_its_job_back_at_once(bus: Bus, events: Events, make_job) -> None:
    started = asyncio.Event()

    class Hangs(FakeRunner):
        async def run(self, job, on_progress=None):
            started.set()
            await asyncio.Event().wait()

    await bus.publish_job(make_job())
    async with running(Worker(bus, GPU, Hangs())):
        await asyncio.wait_for(started.wait(), 10)
    # Given back by nak: the next worker gets it without waiting for ack_wait.
    async with running(Worker(bus, GPU, FakeRunner())):
        (result,) = await events.wait_results(1)
    assert result.attempts == 2


async def test_a_stop_ends_an_idle_fetch_at_once_and_the_next_worker_gets_the_job(
    bus: Bus, events: Events, make_job
) -> None:
    """Fetches that would wait an hour: a stop that waited one out would fail ``running``'s 30 s."""
    async with running(Worker(bus, GPU, FakeRunner(), poll_s=3600)):
        await asyncio.sleep(0.1)  # its fetch is waiting on the server now
    await bus.publish_job(make_job())
    async with running(Worker(bus, GPU, FakeRunner(), poll_s=3600)):
        (result,) = await events.wait_results(1)
    assert result.result.passed


async def test_a_worker_started_before_the_core_waits_for_its_queue(nats_url: str, make_job) -> None:
    early = await Bus.connect(nats_url, name="early-worker")
    core = await Bus.connect(nats_url, name="core")
    runner = FakeRunner()
    try:
        async with running(Worker(early, "H100", runner, poll_s=0.1)):
            await core.ensure_streams(["H100"], ack_wait_s=1)
            await hand_out_jobs(core, ["H100"])
            await core.publish_job(make_job("H100"))
            done = asyncio.Queue()

            async def on_results(results: list[RunResult]) -> None:
                done.put_nowait(results)

            async with await core.consume_results(on_results):
                (result,) = await asyncio.wait_for(done.get(), 20)
        assert result.gpu == "H100" and runner.runs == 1
    finally:
        await early.close()
        await core.close()


async def test_worker_killed_mid_job_is_redelivered_and_completes_once(
    bus: Bus, events: Events, js, make_job, crash_worker, eventually
) -> None:
    job = make_job()
    await bus.publish_job(job)
    proc = crash_worker()
    assert await asyncio.to_thread(proc.wait, 60) == 3  # it took the job and died holding it
    runner = FakeRunner()
    async with running(Worker(bus, GPU, runner, poll_s=0.2)):
        (result,) = await events.wait_results(1)

        await eventually(lambda: drained(js))  # so no second result can ever be produced
    assert [r.run_id for r in events.results] == [job.run_id]
    assert result.attempts == 2 and result.result.passed
    assert runner.runs == 1
    attempts = [p.progress.detail for p in events.progress if p.progress.stage == STARTED]
    assert len(attempts) == 2 and attempts[-1].endswith("attempt 2 of 3")
