"""Dead letters: jobs that failed ``max_deliver`` times leave the work queue and their user is told.

The server does not remove such a job: it stays in JOBS, and the server only emits a MAX_DELIVERIES
advisory, on the next pull of that pool. Advisories are not stored, so one emitted while the core was
down is lost. Two paths therefore lead here, and both are safe to run at once:

- the advisory subscriber acts within milliseconds of the server giving up;
- a periodic sweep finds what an advisory missed: every job a pool delivered, still stored, while that
  pool has nothing in flight (see ``Bus.stranded_jobs``).

Moving a job: copy it to ``jobs.dead.<gpu>`` (headers ``x-orig-seq``, ``x-deliveries``), call
``on_dead``, then delete it from JOBS. A crash in between repeats the move later, so ``on_dead`` must be
idempotent on the run id (the core stores the failure keyed by run id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from core.contracts.bus import Bus, Running
from core.contracts.messages import DecodeError, RunJob, decode

log = logging.getLogger(__name__)

OnDead = Callable[[RunJob, int], Awaitable[None]]


class DeadLetters:
    """Watch JOBS for jobs no worker will get again; ``await start()``, then ``await stop()``."""

    def __init__(self, bus: Bus, on_dead: OnDead, *, sweep_every_s: float = 30.0) -> None:
        self._bus = bus
        self._on_dead = on_dead
        self._sweep_every_s = sweep_every_s
        self._lock = asyncio.Lock()  # one move at a time: the two paths may report the same job
        self._stopping = asyncio.Event()
        self._watch: Running | None = None
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._stopping.clear()
        self._watch = await self._bus.watch_max_deliveries(self.move)
        self._sweeper = asyncio.create_task(self._sweep_forever())

    async def stop(self) -> None:
        self._stopping.set()
        if self._sweeper:
            await self._sweeper
        if self._watch:
            await self._watch.stop()

    async def sweep(self) -> int:
        """Move every stranded job now; return how many were found."""
        stranded = await self._bus.stranded_jobs()
        for stream_seq, deliveries in stranded:
            await self.move(stream_seq, deliveries)
        return len(stranded)

    async def move(self, stream_seq: int, deliveries: int) -> None:
        """Dead-letter the job at ``stream_seq`` in JOBS; nothing happens if it is already gone."""
        async with self._lock:
            payload = await self._bus.dead_letter_job(stream_seq, deliveries)
            if payload is None:
                return
            try:
                job = decode(RunJob, payload)
            except DecodeError as exc:
                log.error("dead-lettered an unreadable job (JOBS seq %d): %s", stream_seq, exc)
            else:
                log.warning(
                    "run %s on %s failed after %d deliveries; moved to the dead-letter queue",
                    job.run_id,
                    job.gpu,
                    deliveries,
                )
                await self._on_dead(job, deliveries)
            await self._bus.delete_job(stream_seq)

    async def _sweep_forever(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.sweep()
            except Exception:  # a failed sweep (NATS restarting, on_dead failing) is retried next time
                log.exception("dead-letter sweep failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._sweep_every_s)
