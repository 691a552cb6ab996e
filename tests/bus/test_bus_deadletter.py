"""Jobs that fail every delivery move to JOBS_DLQ, and the core hears about each exactly once."""

import asyncio

import pytest
from worker_testkit import running

from core.contracts import subjects
from core.contracts.bus import Bus, Running
from core.contracts.messages import RunJob, decode
from core.service.deadletter import DeadLetters
from runners.fake import FakeRunner
from runners.worker import Worker

GPU = "CPU"


class DeadLog:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.called = asyncio.Event()

    async def on_dead(self, job: RunJob, deliveries: int) -> None:
        self.calls.append((job.run_id, deliveries))
        self.called.set()


async def advisory_seen(bus: Bus) -> tuple[asyncio.Event, Running]:
    seen = asyncio.Event()

    async def note(stream_seq: int, deliveries: int) -> None:
        seen.set()

    return seen, await bus.watch_max_deliveries(note)


async def assert_dead_lettered(js, count, job: RunJob) -> None:
    # on_dead has run; the job's removal from the queue follows it, so wait for it (bounded) rather than race it
    deadline = asyncio.get_running_loop().time() + 10
    while await count(subjects.JOBS) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert await count(subjects.JOBS) == 0
    assert await count(subjects.JOBS_DLQ) == 1
    dead = await js.get_last_msg(subjects.JOBS_DLQ, subjects.dead_subject(subjects.job_subject(GPU)))
    assert dead.headers["x-deliveries"] == "3"
    assert dead.headers["x-orig-seq"] == "1"
    assert decode(RunJob, dead.data).run_id == job.run_id


async def test_a_job_given_back_three_times_is_dead_lettered_once(bus: Bus, js, count, make_job) -> None:
    dead = DeadLog()
    letters = DeadLetters(bus, dead.on_dead, sweep_every_s=0.1)  # advisory and sweep race for it
    await letters.start()
    job = make_job()
    await bus.publish_job(job)
    runner = FakeRunner(fail_times=100)
    try:
        async with running(Worker(bus, GPU, runner, retry_delay_s=0.05, poll_s=0.2)):
            await asyncio.wait_for(dead.called.wait(), 20)
        await letters.sweep()  # one more pass finds nothing left to move
    finally:
        await letters.stop()
    assert dead.calls == [(job.run_id, 3)]
    assert runner.runs == 3
    await assert_dead_lettered(js, count, job)


async def test_the_sweep_catches_a_job_whose_advisory_was_missed(bus: Bus, js, count, make_job) -> None:
    job = make_job()
    await bus.publish_job(job)
    seen, watch = await advisory_seen(bus)
    async with running(Worker(bus, GPU, FakeRunner(fail_times=100), retry_delay_s=0.05, poll_s=0.2)):
        await asyncio.wait_for(seen.wait(), 20)  # the server gave up while no DeadLetters listened
    await watch.stop()
    assert await count(subjects.JOBS) == 1  # the server leaves it in the queue

    dead = DeadLog()
    letters = DeadLetters(bus, dead.on_dead, sweep_every_s=0.1)
    await letters.start()
    try:
        await asyncio.wait_for(dead.called.wait(), 20)
    finally:
        await letters.stop()
    assert dead.calls == [(job.run_id, 3)]
    await assert_dead_lettered(js, count, job)


async def test_the_sweep_leaves_queued_and_running_jobs_alone(bus: Bus, count, make_job) -> None:
    started = asyncio.Event()

    class Hangs(FakeRunner):
        async def run(self, job, on_progress=None):
            started.set()
            await asyncio.Event().wait()

    dead = DeadLog()
    letters = DeadLetters(bus, dead.on_dead)
    await bus.publish_job(make_job())
    assert await letters.sweep() == 0  # queued, never delivered
    async with running(Worker(bus, GPU, Hangs())):
        await asyncio.wait_for(started.wait(), 10)
        await bus.publish_job(make_job())
        assert await letters.sweep() == 0  # one running, one waiting behind it
    assert await count(subjects.JOBS) == 2
    assert dead.calls == []


@pytest.mark.slow
async def test_a_job_that_kills_every_worker_is_dead_lettered(bus: Bus, js, count, make_job, crash_worker) -> None:
    dead = DeadLog()
    letters = DeadLetters(bus, dead.on_dead, sweep_every_s=0.5)
    await letters.start()
    job = make_job()
    await bus.publish_job(job)
    try:
        for _ in range(3):
            proc = crash_worker()
            assert await asyncio.to_thread(proc.wait, 60) == 3  # took the job, died holding it
        # The server gives up only when the pool is next pulled: a healthy worker comes along.
        survivor = FakeRunner()
        async with running(Worker(bus, GPU, survivor, poll_s=0.2)):
            await asyncio.wait_for(dead.called.wait(), 20)
    finally:
        await letters.stop()
    assert dead.calls == [(job.run_id, 3)]
    assert survivor.runs == 0
    await assert_dead_lettered(js, count, job)


async def test_an_on_dead_failure_is_retried_by_the_next_sweep(bus: Bus, count, make_job) -> None:
    calls: list[str] = []
    done = asyncio.Event()

    async def flaky(job: RunJob, deliveries: int) -> None:
        calls.append(job.run_id)
        if len(calls) == 1:
            raise RuntimeError("database busy")
        done.set()

    letters = DeadLetters(bus, flaky, sweep_every_s=0.1)
    await letters.start()
    job = make_job()
    await bus.publish_job(job)
    try:
        async with running(Worker(bus, GPU, FakeRunner(fail_times=100), retry_delay_s=0.05, poll_s=0.2)):
            await asyncio.wait_for(done.wait(), 20)
    finally:
        await letters.stop()
    assert calls == [job.run_id, job.run_id]
    assert await count(subjects.JOBS) == 0
    assert await count(subjects.JOBS_DLQ) == 1  # the second copy was a duplicate (same run id)


async def test_a_dead_letter_keeps_no_source_seed_or_result_key(bus: Bus, js, make_job) -> None:
    job = make_job(source="def custom_kernel(data):\n    return data  # SECRET-SOURCE\n")
    job.job.secret_seed = 123456789012345678
    job.result_key = "k3y" * 20
    await bus.publish_job(job)
    dead = DeadLog()
    await DeadLetters(bus, dead.on_dead).move(1, 3)
    assert dead.calls == [(job.run_id, 3)]
    stored = (await js.get_last_msg(subjects.JOBS_DLQ, subjects.dead_subject(subjects.job_subject(GPU)))).data
    for secret in (b"SECRET-SOURCE", b"123456789012345678", job.result_key.encode(), b"# reference"):
        assert secret not in stored
    kept = decode(RunJob, stored)
    assert (kept.run_id, kept.submission_id, kept.job.mode) == (job.run_id, job.submission_id, job.job.mode)
