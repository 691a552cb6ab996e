"""What every worker reports besides results: its pool's state every few seconds, and what each run cost."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import os

import nats
import pytest

from core.contracts import subjects
from core.contracts.messages import PoolStatus, decode
from harness.job import EvalJob
from harness.result import EvalResult, ProfileEntry, ReportFile
from runners.fake import FakeRunner, passed_result
from runners.worker import Worker


def ten_gpu_seconds(job: EvalJob) -> EvalResult:
    return dataclasses.replace(passed_result(job), gpu_s=10.0)


@pytest.mark.parametrize("price, cost", [(0.001097, 0.01097), (None, None)])
async def test_a_result_carries_the_cost_of_its_gpu_time_where_the_backend_bills(
    bus, results, run_job, serve, price, cost
) -> None:
    await bus.publish_job(run_job("CPU"))
    async with serve(Worker(bus, "CPU", FakeRunner(ten_gpu_seconds, price_per_s=price), poll_s=0.2)):
        (result,) = await results.wait(1)
    assert result.cost_usd == cost


async def test_workers_report_running_jobs_and_capacity_until_they_stop(
    bus, nats_url, run_job, results, serve, eventually
) -> None:
    nc = await nats.connect(nats_url)
    statuses: list[PoolStatus] = []

    async def on_status(msg) -> None:
        statuses.append(decode(PoolStatus, msg.data))

    async def busy() -> bool:
        return any(status.running == 1 for status in statuses)

    async def signed_off() -> bool:
        return bool(statuses) and statuses[-1].capacity == 0

    await nc.subscribe(subjects.pool_status_subject("w-cpu", "CPU"), cb=on_status)
    try:
        await bus.publish_job(run_job("CPU"))
        async with serve(
            Worker(bus, "CPU", FakeRunner(delay_s=1.5), concurrency=3, poll_s=0.1, status_s=0.1, name="w-cpu")
        ):
            await eventually(busy)
            await results.wait(1)
        await eventually(signed_off)
    finally:
        await nc.close()
    assert {(s.gpu, s.worker, s.backend, s.backlog) for s in statuses} == {("CPU", "w-cpu", "fake", 0)}
    assert {s.capacity for s in statuses[:-1]} == {3} and statuses[-1].running == 0
    assert all(later.at >= earlier.at for earlier, later in zip(statuses, statuses[1:], strict=False))


def profiled_with_a_huge_report(job: EvalJob) -> EvalResult:
    data = os.urandom(3 << 20)  # base64 of 3 MiB: far over NATS's 1 MB payload
    entry = ProfileEntry(
        spec={"size": 1},
        table="kernel  duration 1.0 us",
        tool="ncu",
        report=ReportFile("shape0.ncu-rep", base64.b64encode(data).decode(), len(data)),
    )
    return dataclasses.replace(passed_result(job), profiles=[entry])


async def test_a_worker_stops_even_when_its_status_loop_loses_a_cancellation(bus, serve, monkeypatch) -> None:
    """Python 3.11's ``asyncio.wait_for`` (inside nats-py too) can swallow a cancellation when its inner call
    completes at the moment it is cancelled; the status loop must still end when the worker stops."""
    publish = bus.publish_pool_status

    async def publish_losing_a_cancellation(status: PoolStatus) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.5)
        await publish(status)

    monkeypatch.setattr(bus, "publish_pool_status", publish_losing_a_cancellation)
    worker = Worker(bus, "CPU", FakeRunner(), poll_s=0.1, status_s=0.01, name="w-cpu")
    async with serve(worker):  # fails when the worker has not stopped 30 s after being asked to
        await asyncio.sleep(0.3)  # the status loop is mostly inside the publish: the stop's cancel lands there


async def test_an_ncu_report_too_large_for_the_bus_is_left_out_never_cut(bus, results, run_job, serve) -> None:
    await bus.publish_job(run_job("CPU"))
    async with serve(Worker(bus, "CPU", FakeRunner(profiled_with_a_huge_report), poll_s=0.2)):
        (result,) = await results.wait(1)
    (entry,) = result.result.profiles
    assert result.result.status.value == "passed" and entry.report is None
    assert entry.table == "kernel  duration 1.0 us" and "3.0 MiB" in entry.note and "too large" in entry.note
