"""Helpers tests share as plain imports (pytest puts this folder on sys.path: tests/conftest.py lives here)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from core.contracts.bus import Bus, Running
from core.service.dispatch import Dispatcher
from core.service.runs import RunBook
from core.service.worker_reports import ReportCheck
from runners.worker import Worker

WORKER = "w-cpu"  # the worker tests/conftest.py's authed_nats issues for the CPU pool
TEST_SECRET = b"the tests' core secret"


async def hand_out_jobs(
    bus: Bus, pools: list[str], secret: bytes = TEST_SECRET, runs: RunBook | None = None
) -> Running:
    """The core's part workers need (``core.service.dispatch``), without the rest of the core: for bus tests.
    ``runs`` is the run book it records each attempt's holder in."""
    runs = runs if runs is not None else RunBook()
    checks = ReportCheck(secret, runs, bus, worker_keys=bus.authenticated)
    return await Dispatcher(bus, secret, runs, checks).start(pools)


@contextlib.asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[Worker]:
    """Serve jobs with ``worker`` for the length of the block, then stop it and wait for it to finish."""
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        yield worker
    finally:
        stop.set()
        done, _ = await asyncio.wait({task}, timeout=30)  # not wait_for: it would wait on for a worker that hangs
        if not done:
            task.cancel()
            raise AssertionError("the worker did not stop within 30 s of being asked to")
        task.result()
