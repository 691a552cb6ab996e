"""Stream retention: dead jobs do not stay forever, and a full job queue refuses new jobs instead of dropping any."""

from __future__ import annotations

import pytest
from nats.js.api import DiscardPolicy

from core import subjects
from core.bus import Bus, QueueFull
from core.bus._streams import DEAD_MAX_AGE_S, DEAD_MAX_BYTES, JOBS_MAX_BYTES


async def test_dead_letters_expire_and_the_job_queue_is_bounded(bus: Bus, js) -> None:
    dead = (await js.stream_info(subjects.JOBS_DLQ)).config
    assert (dead.max_age, dead.max_bytes, dead.discard) == (DEAD_MAX_AGE_S, DEAD_MAX_BYTES, DiscardPolicy.OLD)
    jobs = (await js.stream_info(subjects.JOBS)).config
    assert (jobs.max_bytes, jobs.discard) == (JOBS_MAX_BYTES, DiscardPolicy.NEW)
    assert not jobs.max_age                        # an accepted job is never dropped for its age


async def test_a_full_job_queue_refuses_the_next_job_and_keeps_the_others(bus: Bus, make_job, count) -> None:
    await bus.ensure_streams(["CPU"], jobs_max_bytes=3 * 1024)
    stored = 0
    with pytest.raises(QueueFull, match="full"):
        for _ in range(50):
            await bus.publish_job(make_job())
            stored += 1
    assert 0 < stored < 50 and await count(subjects.JOBS) == stored
