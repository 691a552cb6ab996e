"""Stream retention: dead jobs do not stay forever, a full job queue refuses new jobs instead of dropping any, and
every stream has a byte limit (EVENTS, where workers publish, refuses a flood past it)."""

from __future__ import annotations

import pytest
from nats.js.api import DiscardPolicy

from core.contracts import signing, subjects
from core.contracts.bus import Bus, QueueFull
from core.contracts.bus._kv import RUNNER_CALLS_CONFIG
from core.contracts.bus._streams import (
    DEAD_MAX_AGE_S,
    DEAD_MAX_BYTES,
    EVENTS_MAX_BYTES,
    JOBS_MAX_BYTES,
    REPLIES_MAX_BYTES,
)
from core.contracts.messages import RunResult
from core.service.runs import RunBook
from core.service.worker_reports import ReportCheck
from harness.result import EvalResult, Mode, Status

SECRET = b"core secret"


async def test_dead_letters_expire_and_the_job_queue_is_bounded(bus: Bus, js) -> None:
    dead = (await js.stream_info(subjects.JOBS_DLQ)).config
    assert (dead.max_age, dead.max_bytes, dead.discard) == (DEAD_MAX_AGE_S, DEAD_MAX_BYTES, DiscardPolicy.OLD)
    jobs = (await js.stream_info(subjects.JOBS)).config
    assert (jobs.max_bytes, jobs.discard) == (JOBS_MAX_BYTES, DiscardPolicy.NEW)
    assert not jobs.max_age  # an accepted job is never dropped for its age
    events = (await js.stream_info(subjects.EVENTS)).config
    assert (events.max_bytes, events.discard) == (EVENTS_MAX_BYTES, DiscardPolicy.NEW)
    replies = (await js.stream_info(subjects.REPLIES)).config
    assert (replies.max_bytes, replies.discard) == (REPLIES_MAX_BYTES, DiscardPolicy.OLD)
    for stream in (subjects.JOBS, subjects.JOBS_DLQ, subjects.EVENTS, subjects.REPLIES):
        assert 0 < (await js.stream_info(stream)).config.max_msg_size <= bus.max_payload + 64 * 1024


async def test_a_stream_made_before_the_limits_gets_them_at_the_next_start(bus: Bus, js) -> None:
    old = (await js.stream_info(subjects.EVENTS)).config
    old.max_bytes, old.max_msg_size, old.discard = -1, -1, DiscardPolicy.OLD
    await js.update_stream(old)
    calls = f"KV_{subjects.RUNNER_CALLS}"
    old_calls = (await js.stream_info(calls)).config
    assert old_calls.max_bytes == RUNNER_CALLS_CONFIG.max_bytes
    old_calls.max_bytes, old_calls.max_msg_size, old_calls.allow_direct = -1, -1, False
    await js.update_stream(old_calls)
    await bus.ensure_streams(["CPU"])
    assert (await js.stream_info(subjects.EVENTS)).config.max_bytes == EVENTS_MAX_BYTES
    assert (await js.stream_info(subjects.EVENTS)).config.discard == DiscardPolicy.NEW
    bounded = (await js.stream_info(calls)).config
    limits = (RUNNER_CALLS_CONFIG.max_bytes, 16 << 10, True)
    assert (bounded.max_bytes, bounded.max_msg_size, bounded.allow_direct) == limits


async def test_a_full_job_queue_refuses_the_next_job_and_keeps_the_others(bus: Bus, make_job, count) -> None:
    await bus.ensure_streams(["CPU"], jobs_max_bytes=3 * 1024)
    stored = 0
    with pytest.raises(QueueFull, match="full"):
        for _ in range(50):
            await bus.publish_job(make_job())
            stored += 1
    assert 0 < stored < 50 and await count(subjects.JOBS) == stored


async def test_only_a_result_signed_with_the_attempts_key_counts_as_stored(bus: Bus, make_job) -> None:
    """What the core asks before it hands a job out again (``core.service.dispatch``): a forged result must not
    make it skip the run."""
    job = make_job()
    check = ReportCheck(SECRET, RunBook(), bus, worker_keys=False)
    key = signing.attempt_key(signing.run_key(SECRET, job.run_id), 1)
    result = RunResult(
        run_id=job.run_id,
        submission_id=1,
        gpu=job.gpu,
        result=EvalResult(status=Status.PASSED, mode=Mode.TEST, problem="identity"),
        worker="w",
    )
    assert not await check.has_result(job.run_id)
    await bus.publish_result(result)  # unsigned: anyone with a worker's role
    await bus.publish_result(result, signing.attempt_key(signing.run_key(SECRET, "another run"), 1))
    await bus.publish_result(result, signing.run_key(SECRET, job.run_id))  # the run's key is no attempt's key
    assert not await check.has_result(job.run_id)
    await bus.publish_result(result, key)
    assert await check.has_result(job.run_id)
    assert (await bus.last_result(job.run_id)) == signing.sign(result, key)
