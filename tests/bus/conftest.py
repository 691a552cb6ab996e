"""Fixtures for the bus, worker and dead-letter tests: a connected Bus, jobs, and ways to look inside NATS.

Helpers are fixtures (``make_job``, ``count``, ``crash_worker``; ``eventually`` comes from tests/conftest.py)
so tests need no imports from here.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import nats
import pytest
from nats.js import JetStreamContext
from worker_testkit import hand_out_jobs

from core.contracts.bus import Bus
from core.contracts.messages import RunJob, new_id
from harness.job import EvalJob
from harness.problem import Problem, TaskSpec
from harness.result import Mode

ACK_WAIT_S = 1.0
GPU = "CPU"
REPO = Path(__file__).resolve().parents[2]


def _make_job(
    gpu: str = GPU, *, source: str = "def custom_kernel(data):\n    return data\n", mode: Mode = Mode.TEST
) -> RunJob:
    problem = Problem(
        name="identity",
        task=TaskSpec(tests=[{"size": 3}, {"size": 5}], devices=["cpu"]),
        files={"reference.py": "# reference\n"},
        submission_name="submission.py",
    )
    run_id = new_id()
    return RunJob(
        run_id=run_id,
        submission_id=1,
        leaderboard="identity",
        gpu=gpu,
        job=EvalJob(problem=problem, submission_name="kernel.py", submission_source=source, mode=mode, run_id=run_id),
    )


@pytest.fixture
def make_job() -> Callable[..., RunJob]:
    """``make_job(gpu="CPU", source=..., mode=Mode.TEST)``: a RunJob for a tiny CPU problem, new run id."""
    return _make_job


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[Bus]:
    """A bus with kernelrank's streams and the CPU pool's job queue (ack_wait 1 s, 3 deliveries)."""
    bus = await Bus.connect(nats_url, name="test")
    await bus.ensure_streams([GPU], ack_wait_s=ACK_WAIT_S, max_deliver=3)
    await hand_out_jobs(bus, [GPU])  # workers get jobs from the core: this is its part of that
    yield bus
    await bus.close()


@pytest.fixture
async def js(nats_url: str) -> AsyncIterator[JetStreamContext]:
    """Raw JetStream, to look at streams and consumers from outside the bus."""
    nc = await nats.connect(nats_url)
    yield nc.jetstream()
    await nc.close()


@pytest.fixture
def count(js: JetStreamContext) -> Callable[[str], Awaitable[int]]:
    """``await count("JOBS")``: messages stored in a stream."""

    async def messages(stream: str) -> int:
        return (await js.stream_info(stream)).state.messages

    return messages


@pytest.fixture
def crash_worker(nats_url: str) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Start a worker process whose runner os._exit(3)s as soon as it gets a job; leftovers are killed."""
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        procs.append(
            subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("crash_worker.py")), nats_url, GPU], cwd=REPO, env=env
            )
        )
        return procs[-1]

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def _raw_request(nc: nats.NATS, subject: str, payload: bytes) -> nats.aio.msg.Msg:
    """A plain NATS request, asked again on "no responders": rarely (about 1 in 20 test runs on nats-server 2.15)
    a request just after the responder subscribed and flushed meets none. ``Bus.request`` retries the same way."""
    for _ in range(10):
        try:
            return await nc.request(subject, payload, timeout=5)
        except nats.errors.NoRespondersError:
            await asyncio.sleep(0.1)
    return await nc.request(subject, payload, timeout=5)


@pytest.fixture
def raw_request() -> Callable[[nats.NATS, str, bytes], Awaitable[nats.aio.msg.Msg]]:
    return _raw_request
