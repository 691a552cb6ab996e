"""The runner worker: gets one GPU pool's jobs from the core, runs them through a backend, reports back, then acks.

The core hands each job to one worker (``core.service.dispatch``), with the attempt number and that attempt's
result key, and acknowledges, gives back or heartbeats it only for that worker: a worker has no access to the job
queue itself, so none can settle or take over another's job. (A job whose result is already stored, delivered
again because its ack was lost, the core acknowledges without handing it out.)

Per job: publish a ``started`` progress, heartbeat ``in_progress`` every ack_wait/3 while the backend runs,
forward the backend's progress, publish the ``RunResult``, and only then ack. The ``started`` event marks the run
running in the core, so a job whose ``started`` cannot be stored is given back, not run. So a worker that
dies mid-job leaves the job to be redelivered (once it stops heartbeating), and a result is never lost between
run and ack. Only the
``started`` event is waited for (it marks the run running); later progress is sent without waiting. A
result larger than the bus carries has its longest texts cut (``Bus.fit``) before it is sent; one that still
does not fit is reported as an error, never retried: it would fail the same way every time. Progress and
result carry the job's delivery number and the worker's name (its NATS user, whose subjects they go out on), and
are signed with the attempt's result key bound to the worker's own key (``core.contracts.signing``): the core
trusts nothing else.

Outcomes: ``RunnerUnavailable`` (the backend cannot run anything right now) gives the job back for a
later delivery; any other exception becomes an error result blamed on kernelrank, never on the kernel,
and the worker goes on. Stopping cancels the runs in flight and gives their jobs back at once.

Every ``status_s`` the worker publishes a ``PoolStatus`` (runs in flight, capacity, and the backlog inside
its backend, such as Modal's own queue), and a last one with no capacity when it stops. A result's cost
is its ``gpu_s`` times the backend's ``price_per_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from core.contracts.bus import Bus, BusError, Granted, PayloadTooLarge, Role, WorkQueue
from core.contracts.config import ConfigError, Settings
from core.contracts.credentials import BusCredentials, for_role
from core.contracts.messages import PoolStatus, RunJob, RunProgress, RunResult, encode
from harness.result import EvalResult, Failure, FailureKind, Progress, Status
from runners.base import Runner, RunnerUnavailable

log = logging.getLogger(__name__)

STARTED = "started"  # the stage of the progress event a worker sends when it picks a job up
RETRY_DELAY_S = 10.0  # how long a job given back by an unavailable runner waits
POLL_S = 1.0  # longest idle fetch (a stop ends it at once)
STATUS_S = 5.0  # how often a worker reports its pool's state (PoolStatus)


class Worker:
    """Runs jobs of one GPU pool, up to ``concurrency`` at once, until ``stop`` is set."""

    def __init__(
        self,
        bus: Bus,
        gpu: str,
        runner: Runner,
        *,
        concurrency: int = 1,
        heartbeat_s: float | None = None,
        name: str | None = None,
        retry_delay_s: float = RETRY_DELAY_S,
        poll_s: float = POLL_S,
        status_s: float = STATUS_S,
    ) -> None:
        if concurrency < 1:
            raise ValueError("a worker needs a concurrency of at least 1")
        self.bus, self.gpu, self.runner = bus, gpu, runner
        self.concurrency = concurrency
        self.heartbeat_s = heartbeat_s
        # on a bus that asks for credentials the name is the worker's NATS user: its subjects carry it
        self.name = name or bus.worker_name or f"{gpu}@{socket.gethostname()}:{os.getpid()}"
        self.retry_delay_s = retry_delay_s
        self.poll_s = poll_s
        self.status_s = status_s

    async def run(self, stop: asyncio.Event) -> None:
        queue = await self._wait_for_queue(stop)
        if queue is None:
            return
        heartbeat_s = self.heartbeat_s or queue.ack_wait_s / 3
        log.info(
            "worker %s serving %s (%d at once, heartbeat %.1f s)", self.name, self.gpu, self.concurrency, heartbeat_s
        )
        running: set[asyncio.Task[None]] = set()
        stopped = asyncio.create_task(stop.wait())
        ending = asyncio.Event()
        reporting = asyncio.create_task(self._report(lambda: len(running), ending))
        try:
            while not stop.is_set():
                free = self.concurrency - len(running)
                if free <= 0:
                    await asyncio.wait({*running, stopped}, return_when=asyncio.FIRST_COMPLETED)
                    continue
                try:
                    deliveries = await _fetch_unless(stop, stopped, queue, self.poll_s, free)
                except BusError as exc:
                    log.warning("worker %s cannot fetch jobs, retrying: %s", self.name, exc)
                    await _sleep_unless(stop, self.poll_s)
                    continue
                for delivery in deliveries:
                    if stop.is_set():
                        await _give_back(delivery)
                        continue
                    task = asyncio.create_task(self._run_job(delivery, heartbeat_s, queue.max_deliver))
                    running.add(task)
                    task.add_done_callback(running.discard)
        finally:
            ending.set()
            stopped.cancel()
            reporting.cancel()
            for task in running:
                task.cancel()
            await asyncio.gather(*running, reporting, return_exceptions=True)
            await self._publish_status(running=0, capacity=0, backlog=0)  # this worker takes no more jobs
            await queue.close()

    async def _wait_for_queue(self, stop: asyncio.Event) -> WorkQueue | None:
        """The pool's jobs; a worker started before the core waits for the core to serve them."""
        warned = False
        while not stop.is_set():
            try:
                return await self.bus.jobs(self.gpu, self.name)
            except BusError as exc:
                if not warned:
                    log.warning("worker %s waiting: %s", self.name, exc)
                    warned = True
                await _sleep_unless(stop, self.poll_s)
        return None

    async def _run_job(self, delivery: Granted, heartbeat_s: float, max_deliver: int) -> None:
        job = delivery.message
        beat = asyncio.create_task(_heartbeat(delivery, heartbeat_s))
        of_max = f" of {max_deliver}" if max_deliver > 0 else ""
        try:
            attempt = delivery.deliveries
            started = Progress(stage=STARTED, detail=f"{self.name}, attempt {attempt}{of_max}")
            try:
                await self._publish_progress(job, attempt, started, confirm=True)
            except BusError as exc:
                log.warning("run %s given back: its start could not be reported (%s)", job.run_id, exc)
                await delivery.nak(self.retry_delay_s)
                return
            try:
                result = await self.runner.run(job.job, lambda progress: self._progress(job, attempt, progress))
            except RunnerUnavailable as exc:
                log.warning("run %s given back for %.0f s: %s", job.run_id, self.retry_delay_s, exc)
                await delivery.nak(self.retry_delay_s)
                return
            except Exception as exc:
                log.exception("run %s: the %s runner failed", job.run_id, getattr(self.runner, "name", "?"))
                result = _harness_error(job, exc)
            report = RunResult(
                run_id=job.run_id,
                submission_id=job.submission_id,
                gpu=job.gpu,
                result=result,
                worker=self.name,
                attempts=attempt,
                cost_usd=_cost(result, self.runner.price_per_s),
            )
            report.result = _without_large_reports(report, self.bus.max_payload)
            try:
                report = self.bus.fit(report)  # long texts cut to what the bus carries, before signing
            except PayloadTooLarge as exc:  # too big even cut down: the same every attempt
                log.error("run %s: the result cannot be sent (%s); reporting an error instead", job.run_id, exc)
                report.result = _unsendable(job, result)
            await self.bus.publish_result(report, job.result_key)
            await delivery.ack()
        except asyncio.CancelledError:
            await _give_back(delivery)
            raise
        except BusError as exc:
            log.error("run %s could not be reported (%s); it will be delivered again", job.run_id, exc)
        finally:
            beat.cancel()

    async def _report(self, running: Callable[[], int], ending: asyncio.Event) -> None:
        """Publish the pool's state every ``status_s`` until ``ending`` is set or the task is cancelled (both:
        Python 3.11's ``asyncio.wait_for``, inside nats-py too, can swallow a cancellation)."""
        while not ending.is_set():
            try:
                async with asyncio.timeout(self.status_s):
                    backlog = await self.runner.backlog()
            except Exception as exc:  # a slow or failing backend must not stop the reports
                log.debug("backlog of %s unknown: %r", self.gpu, exc)
                backlog = 0
            await self._publish_status(running=running(), capacity=self.concurrency, backlog=backlog)
            await _sleep_unless(ending, self.status_s)

    async def _publish_status(self, *, running: int, capacity: int, backlog: int) -> None:
        status = PoolStatus(
            gpu=self.gpu,
            worker=self.name,
            backend=self.runner.name,
            running=running,
            capacity=capacity,
            backlog=backlog,
            at=time.time(),
        )
        try:
            await self.bus.publish_pool_status(status)
        except BusError as exc:
            log.debug("pool status of %s not sent: %s", self.gpu, exc)

    async def _progress(self, job: RunJob, attempt: int, progress: Progress) -> None:
        """Progress is best effort: a lost event must not fail the run."""
        try:
            await self._publish_progress(job, attempt, progress)
        except BusError as exc:
            log.debug("progress of run %s not sent: %s", job.run_id, exc)

    async def _publish_progress(self, job: RunJob, attempt: int, progress: Progress, *, confirm: bool = False) -> None:
        """``confirm`` waits until the stream stores it."""
        await self.bus.publish_progress(
            RunProgress(
                run_id=job.run_id,
                submission_id=job.submission_id,
                gpu=job.gpu,
                progress=progress,
                attempt=attempt,
                worker=self.name,
            ),
            job.result_key,
            confirm=confirm,
        )


def _cost(result: EvalResult, price_per_s: float | None) -> float | None:
    """Dollars for the GPU time a result used, where the backend bills per second."""
    return None if price_per_s is None else round(result.gpu_s * price_per_s, 6)


def _harness_error(job: RunJob, exc: Exception) -> EvalResult:
    message = (
        "kernelrank could not evaluate this submission because of an internal error (not a problem with "
        "your kernel). The team has the details; please submit again in a few minutes."
    )
    return EvalResult(
        status=Status.ERROR,
        mode=job.job.mode,
        problem=job.job.problem.name,
        failure=Failure(kind=FailureKind.HARNESS_ERROR, message=message, log_tail=f"{type(exc).__name__}: {exc}"),
    )


def _without_large_reports(report: RunResult, max_bytes: int) -> EvalResult:
    """The result with its attached ncu reports left out (and said so) when the message would not fit the bus.

    A report is a base64 file: cut to fit like other texts, it would be unreadable. The summary tables stay.
    """
    result = report.result
    if not any(entry.report for entry in result.profiles) or len(encode(report)) <= max_bytes:
        return result  # only a profile with reports is measured here: fit() measures the rest
    for entry in result.profiles:
        if entry.report is not None:
            size_mib = entry.report.size_bytes / 2**20
            entry.note = (
                (f"{entry.note}; " if entry.note else "")
                + f"the full ncu report ({size_mib:.1f} MiB) was too large to send back: profile with "
                "`kernelrank eval --mode profile` on a GPU machine to keep it"
            )
            entry.report = None
    return result


def _unsendable(job: RunJob, result: EvalResult) -> EvalResult:
    message = (
        "This run finished, but its report was too large to send back even after cutting its output "
        "(for example a kernel that prints or returns a huge amount of text). Print less and submit again."
    )
    return EvalResult(
        status=Status.ERROR,
        mode=job.job.mode,
        problem=job.job.problem.name,
        failure=Failure(kind=FailureKind.OUTPUT_FLOOD, message=message),
        wall_s=result.wall_s,
        gpu_s=result.gpu_s,
    )


async def _heartbeat(delivery: Granted, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        try:
            await delivery.in_progress()
        except BusError as exc:
            log.warning("heartbeat for run %s failed: %s", delivery.message.run_id, exc)


async def _give_back(delivery: Granted) -> None:
    """Return a job for immediate redelivery (this worker is stopping)."""
    try:
        await delivery.nak()
    except BusError as exc:
        log.warning("could not give back run %s (it returns after ack_wait): %s", delivery.message.run_id, exc)


async def _fetch_unless(
    stop: asyncio.Event, stopped: asyncio.Task[Any], queue: WorkQueue, timeout_s: float, limit: int
) -> list[Granted]:
    """Up to ``limit`` jobs (those waiting, else the next one), unless the worker is told to stop first: a stop
    ends an idle wait at once. A job the core hands out just as the wait is dropped is held by nobody and comes back
    after its ack wait, to another worker."""
    fetching = asyncio.create_task(queue.fetch(timeout_s, limit))
    await asyncio.wait({fetching, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if not fetching.done():
        fetching.cancel()
        await asyncio.gather(fetching, return_exceptions=True)
        return []
    return fetching.result()


async def _sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stop.wait()


async def run_worker(
    url: str, gpu: str, backend: str, settings: Settings, concurrency: int | None = None, *, stop: asyncio.Event
) -> None:
    """``kernelrank worker --gpu G --backend B``: serve one pool until ``stop`` is set."""
    from runners.backends import build_runner

    credentials = for_role(settings, Role.WORKER)
    check_credentials(credentials, gpu)
    bus = await Bus.connect(url, f"kernelrank-worker-{gpu}", credentials)
    try:
        runner = await build_runner(backend, gpu, settings, bus)
        try:
            await Worker(bus, gpu, runner, concurrency=concurrency or settings.concurrency_for(gpu)).run(stop)
        finally:
            await runner.close()
    finally:
        await bus.close()


def check_credentials(credentials: BusCredentials, gpu: str) -> None:
    """``ConfigError`` (one sentence) for credentials this worker cannot serve ``gpu`` with."""
    if credentials.authenticated and not credentials.key:  # the core would drop every report it sends
        raise ConfigError(
            "this worker has no signing key: give it its credential file from `kernelrank workers add` in "
            "KERNELRANK_NATS_CREDENTIALS, or, where it logs in with a .creds or .nk file (operator-mode NATS), "
            "its key file from `kernelrank workers add --operator-nats` in KERNELRANK_WORKER_KEY_FILE."
        )
    if credentials.pools and gpu not in credentials.pools:
        raise ConfigError(
            f"worker {credentials.worker_name} was issued for {', '.join(credentials.pools)}, not {gpu}: start it "
            f"with --gpu {credentials.pools[0]}, or issue another worker for {gpu} (`kernelrank workers add`)."
        )
