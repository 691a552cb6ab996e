"""The local backend: evaluates jobs on this host's GPU (or its CPU) through one warm harness server.

One job at a time: a GPU timed by two evaluations at once would time neither. The harness call blocks,
so it runs in a thread; its progress events are handed back to the event loop in order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys

from harness.host.server import HarnessServer, HarnessStartError
from harness.job import EvalJob
from harness.result import EvalResult, Progress
from runners.base import ProgressCallback

log = logging.getLogger(__name__)


class LocalRunner:
    """Implements ``runners.base.Runner`` with a ``HarnessServer`` kept alive between jobs."""

    name = "local"
    price_per_s: float | None = None  # this host's GPU: not billed per run

    def __init__(self, device: str = "auto", python: str = sys.executable, server: HarnessServer | None = None) -> None:
        self.device = device  # "auto" | "cpu" | "cuda": used for jobs that say "auto"
        self._server = server or HarnessServer(python)  # ``server``: one made already, warm perhaps
        self._lock = asyncio.Lock()
        self._warming: asyncio.Task[None] | None = None

    @property
    def warm(self) -> bool:
        """Whether the harness server is up (torch imported), so that a job starts at once."""
        return self._server.running

    def warm_up(self) -> None:
        """Start the harness server in the background now: the first job then does not wait for torch's import."""
        self._warming = asyncio.create_task(self._start())

    async def _start(self) -> None:
        async with self._lock:
            try:
                await asyncio.to_thread(self._server.start)
            except HarnessStartError as exc:  # the first job starts it again and reports what failed
                log.warning("the harness server did not start ahead of the first job: %s", exc)

    async def run(self, job: EvalJob, on_progress: ProgressCallback | None = None) -> EvalResult:
        if self.device != "auto" and job.device == "auto":
            job = dataclasses.replace(job, device=self.device)
        async with self._lock:
            loop = asyncio.get_running_loop()
            events: asyncio.Queue[Progress | None] = asyncio.Queue()
            forwarding = asyncio.create_task(_forward(events, on_progress))

            def report(progress: Progress) -> None:  # called on the harness thread
                loop.call_soon_threadsafe(events.put_nowait, progress)

            try:
                return await asyncio.to_thread(self._server.evaluate, job, report)
            except asyncio.CancelledError:
                self._server.cancel()  # the thread cannot be cancelled; its child can be killed
                raise
            finally:
                events.put_nowait(None)
                await forwarding

    async def backlog(self) -> int:
        """Jobs wait in NATS, never inside this runner."""
        return 0

    async def close(self) -> None:
        if self._warming is not None:  # a start in flight would outlive a close made beside it
            await asyncio.wait({self._warming})
        await asyncio.to_thread(self._server.close)


async def _forward(events: asyncio.Queue[Progress | None], on_progress: ProgressCallback | None) -> None:
    while (progress := await events.get()) is not None:
        if on_progress is None:
            continue
        try:
            await on_progress(progress)
        except Exception:
            log.exception("progress callback failed; the evaluation goes on")
