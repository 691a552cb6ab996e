"""Jobs through the core: a worker asks the core for its pool's next job, and the core settles it for the worker.

Only the core reads the job queues (``core.contracts.roles``): a shared JetStream durable lets whoever may
acknowledge one delivery acknowledge (or give back) any other, since an ack subject names no recipient. So a
worker asks on ``svc.work.<worker>.<gpu>`` (its user may publish there only) for up to as many jobs as it has room
for, and the core pulls them from the pool's durable (``_job_pulls``) and hands each over with the delivery's
number as JetStream counted it (the attempt) and a grant, the core's token for "this worker holds this delivery"
(``core.contracts.signing.grant``). To acknowledge, give
back or heartbeat the job the worker shows the grant again, and the core does it on the delivery's ack subject.

The wire: a request is JSON (``op``: ``info``, ``next``, ``ack``, ``nak`` or ``beat``); an answer carries the
queue's ``ack_wait`` and ``max_deliver`` in headers, and for ``next`` the jobs (each one's bytes as stored, with
the attempt's result key, one after another) with, in headers, their sizes, attempts, ack subjects and grants
(comma-separated, in the jobs' order). ``Kr-Error`` holds the core's refusal, one sentence.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import nats.errors
from nats.aio.msg import Msg

from core.contracts import subjects
from core.contracts.bus._consumers import Running, Served
from core.contracts.bus._errors import BusError, translated
from core.contracts.bus._job_pulls import ACK_PREFIX, pull_jobs
from core.contracts.messages import DecodeError, RunJob, decode, encode

log = logging.getLogger(__name__)

ERROR = "Kr-Error"
REQUEST_MARGIN_S = 5.0  # a worker waits this much longer for the core than the core waits for a job
SETTLE_TIMEOUT_S = 5.0  # how long a worker waits for the core to acknowledge, give back or heartbeat a job
NEXT_MAX_WAIT_S = 5.0  # the longest the core waits on the queue for one request
NEXT_MAX_JOBS = 32  # the most jobs one answer hands out
JOB_ROOM_BYTES = 1024  # what a job gains on its way to a worker (result key, headers), kept free under max_payload


@dataclass(frozen=True)
class Settle:
    """A worker's word on a delivery it holds: ``ack``, ``nak`` (after ``delay_s``) or ``beat`` (still running)."""

    op: str
    run_id: str
    attempt: int
    ack: str
    grant: str
    delay_s: float | None = None


@dataclass
class Held:
    """A delivery the core pulled: the job, JetStream's count of its deliveries, its ack subject, and once the core
    hands it to a worker, the grant that worker shows to settle it."""

    job: RunJob
    attempt: int
    ack: str
    grant: str = ""


@dataclass
class Granted:
    """A job the core handed this worker; settle it once (ack or nak), heartbeat it while it runs.

    ``deliveries`` is the attempt as JetStream counted it and the core read it, never this worker's own word.
    """

    message: RunJob
    deliveries: int
    _queue: WorkQueue = field(repr=False)
    _ack: str = field(repr=False)
    _grant: str = field(repr=False)

    async def ack(self) -> None:
        """Acknowledge through the core, which waits until the server confirms (the job will not come back)."""
        await self._settle("ack")

    async def nak(self, delay_s: float | None = None) -> None:
        """Give the job back for redelivery, after ``delay_s`` seconds when given."""
        await self._settle("nak", delay_s)

    async def in_progress(self) -> None:
        """Heartbeat: the core restarts the queue's ack_wait clock for this delivery."""
        await self._settle("beat")

    async def _settle(self, op: str, delay_s: float | None = None) -> None:
        run = self.message.run_id
        await self._queue.settle(Settle(op, run, self.deliveries, self._ack, self._grant, delay_s))


class WorkQueue:
    """A worker's side: one pool's jobs, as the core hands them out (what ``Bus.jobs`` returns)."""

    def __init__(self, nc: Any, worker: str, gpu: str) -> None:
        self._nc, self._worker, self._subject = nc, worker, subjects.work_subject(worker, gpu)
        self.ack_wait_s, self.max_deliver = 30.0, -1

    async def info(self) -> None:
        """Read the queue's ack_wait and max_deliver; ``BusError`` while no core serves this pool."""
        await self._ask({"op": "info"}, SETTLE_TIMEOUT_S)

    async def fetch(self, timeout_s: float, limit: int = 1) -> list[Granted]:
        """Up to ``limit`` jobs: those waiting now, else the next one, or none when none came within ``timeout_s``.
        The core hands out fewer where together they would not fit one message."""
        body = {"op": "next", "wait_s": timeout_s, "max": limit}
        answer = await self._ask(body, timeout_s + REQUEST_MARGIN_S)
        if not answer.data:
            return []
        headers = answer.headers or {}
        try:
            sizes = [int(size) for size in headers.get("Kr-Sizes", str(len(answer.data))).split(",")]
            attempts, acks = headers["Kr-Attempt"].split(","), headers["Kr-Ack"].split(",")
            grants = headers["Kr-Grant"].split(",")
            if not len(sizes) == len(attempts) == len(acks) == len(grants) or sum(sizes) != len(answer.data):
                raise ValueError("the jobs' headers do not match their bytes")
        except (KeyError, ValueError) as exc:
            raise BusError(f"the core's answer could not be read ({exc}); update the worker.") from exc
        granted, start = [], 0
        for size, attempt, ack, grant in zip(sizes, attempts, acks, grants, strict=True):
            data, start = answer.data[start : start + size], start + size
            try:
                granted.append(Granted(decode(RunJob, data), int(attempt), self, ack, grant))
            except DecodeError as exc:  # not given back: it comes back after ack_wait, maybe to a worker that reads it
                log.error("the core handed out a job this worker cannot read (%s); update the worker.", exc)
        return granted

    async def settle(self, settle: Settle) -> None:
        body = {"op": settle.op, "run": settle.run_id, "attempt": settle.attempt, "ack": settle.ack}
        body |= {"grant": settle.grant, "delay_s": settle.delay_s}
        await self._ask(body, SETTLE_TIMEOUT_S)

    async def close(self) -> None:
        """Nothing to release: the worker holds no consumer of its own."""

    async def _ask(self, body: dict[str, Any], timeout_s: float) -> Msg:
        with translated(f"ask the core on {self._subject}"):
            try:
                request = json.dumps({**body, "worker": self._worker}).encode()
                answer = await self._nc.request(self._subject, request, timeout=timeout_s)
            except nats.errors.NoRespondersError as exc:
                raise BusError("no core is serving this pool's jobs yet (it does once it has started).") from exc
        headers = answer.headers or {}
        if ERROR in headers:
            raise BusError(headers[ERROR])
        self.ack_wait_s = float(headers.get("Kr-Ack-Wait", self.ack_wait_s))
        self.max_deliver = int(headers.get("Kr-Max-Deliver", self.max_deliver))
        return answer


class Refused(Exception):
    """The core refuses a worker's request; the message (one sentence) goes back to the worker."""


# What the core's side answers with: the next jobs for a worker (up to a number), and a worker's settlement.
NextJobs = Callable[[str, str, float, int], Awaitable[list[Held]]]
OnSettle = Callable[[str, str, Settle], Awaitable[None]]


class WorkOps:
    """Mixed into ``Bus``: needs its ``_nc``, ``_js``, ``_running`` and ``max_payload``. Both sides of
    ``svc.work``."""

    _nc: Any
    _js: Any
    _running: set[Running]
    max_payload: Any

    async def jobs(self, gpu: str, worker: str = "") -> WorkQueue:
        """The jobs of one GPU pool for ``worker`` (this bus's worker by default), handed out by the core;
        ``BusError`` until a core serves the pool."""
        queue = WorkQueue(self._nc, worker or getattr(self, "worker_name", ""), gpu)
        await queue.info()
        return queue

    async def serve_work(
        self, pools: list[str], queue_info: Callable[[str], tuple[float, int]], next_jobs: NextJobs, on_settle: OnSettle
    ) -> Running:
        """The core's side: answer workers' requests for ``pools`` (queue group ``core``).

        ``next_jobs(worker, gpu, wait_s, limit)`` gives up to ``limit`` jobs with their grants (none: none came);
        ``on_settle(worker, gpu, settle)`` does what a worker asks with a delivery it holds. ``Refused`` from either
        goes back to the worker as its sentence; anything else as a sentence that says to try again.
        """
        served = Served(self._running)
        served_pools = {subjects.token(gpu): gpu for gpu in pools}

        async def answer(msg: Msg) -> None:
            gpu = served_pools.get(subjects.pool_of(msg.subject), "")
            data, headers = b"", {}
            try:
                if not gpu:
                    raise Refused(f"this core does not serve the pool of {msg.subject}.")
                ack_wait_s, max_deliver = queue_info(gpu)
                headers = {"Kr-Ack-Wait": str(ack_wait_s), "Kr-Max-Deliver": str(max_deliver)}
                body = json.loads(msg.data)
                worker = str(body["worker"])  # the subject, which only that worker's user may publish on, backs it
                if subjects.worker_token(worker) != subjects.publisher(msg.subject):
                    raise Refused("this request names another worker than the one that sent it.")
                if body.get("op") == "next":
                    wait_s, limit = min(float(body.get("wait_s", 1.0)), NEXT_MAX_WAIT_S), int(body.get("max", 1))
                    data, headers = handed(
                        await next_jobs(worker, gpu, wait_s, max(1, min(limit, NEXT_MAX_JOBS))), headers
                    )
                elif body.get("op") in ("ack", "nak", "beat"):
                    delay = None if body.get("delay_s") is None else float(body["delay_s"])
                    run, attempt = str(body["run"]), int(body["attempt"])
                    settle = Settle(body["op"], run, attempt, str(body["ack"]), str(body["grant"]), delay)
                    await on_settle(worker, gpu, settle)
                elif body.get("op") != "info":
                    raise Refused("the core did not understand that request; is this worker older or newer?")
            except Refused as exc:
                headers[ERROR] = str(exc)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("unreadable work request on %s: %r", msg.subject, exc)
                headers[ERROR] = "the core could not read that request; is this worker older or newer?"
            except Exception:
                log.exception("could not answer a work request on %s", msg.subject)
                headers[ERROR] = "the core could not do that just now; it is logged, try again shortly."
            if msg.reply:
                with translated("answer a worker"):
                    await self._nc.publish(msg.reply, data, headers=headers)

        async def on_message(msg: Msg) -> None:
            task = asyncio.create_task(answer(msg))
            served.tasks.add(task)
            task.add_done_callback(served.tasks.discard)

        with translated("serve workers"):
            served.sub, *served.more = [
                await self._nc.subscribe(f"svc.work.*.{token}", queue=subjects.CORE_QUEUE, cb=on_message)
                for token in served_pools
            ]
            await self._nc.flush()
        return served

    async def queue_config(self, gpu: str) -> tuple[float, int]:
        """The core's side: ``gpu``'s queue's ack_wait (seconds) and max_deliver, which workers pace themselves by."""
        with translated(f"look up the job queue of {gpu}"):
            info = await self._js.consumer_info(subjects.JOBS, subjects.runner_durable(gpu))
        return info.config.ack_wait or 30.0, info.config.max_deliver or -1

    async def pull_jobs(self, gpu: str, wait_s: float, limit: int = 1) -> list[Held]:
        """The core's side: up to ``limit`` deliveries from ``gpu``'s durable that fit one answer together, or the
        next one within ``wait_s``; none when none came. An unreadable job is terminated (it would fail the same
        way every time)."""
        budget = self.max_payload - limit * JOB_ROOM_BYTES
        with translated(f"pull jobs of {gpu}"):
            msgs = await pull_jobs(self._nc, subjects.runner_durable(gpu), limit, budget, wait_s)
        held = []
        for msg in msgs:
            try:
                held.append(Held(decode(RunJob, msg.data), msg.metadata.num_delivered, msg.reply))
            except DecodeError as exc:
                log.error("dropping an unreadable job of %s: %s", gpu, exc)
                await self.settle_delivery(msg.reply, "term")
        return held

    async def settle_delivery(self, ack: str, op: str, delay_s: float | None = None) -> None:
        """The core's side: acknowledge (waiting for the server), give back, heartbeat or terminate a delivery."""
        if not ack.startswith(f"{ACK_PREFIX}{subjects.JOBS}."):
            raise Refused("that is not a delivery of a job queue.")
        with translated("settle a job"):
            if op == "ack":
                await self._nc.request(ack, b"+ACK", timeout=SETTLE_TIMEOUT_S)
            elif op == "nak":
                payload = b"-NAK" if delay_s is None else b"-NAK " + json.dumps({"delay": int(delay_s * 1e9)}).encode()
                await self._nc.publish(ack, payload)
            else:
                await self._nc.publish(ack, b"+WPI" if op == "beat" else b"+TERM")


def handed(held: list[Held], headers: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """The answer that hands ``held`` to a worker: the jobs one after another, their grants in ``headers``."""
    if not held:
        return b"", headers
    jobs = [encode(one.job) for one in held]
    return b"".join(jobs), headers | {
        "Kr-Sizes": ",".join(str(len(job)) for job in jobs),
        "Kr-Attempt": ",".join(str(one.attempt) for one in held),
        "Kr-Ack": ",".join(one.ack for one in held),
        "Kr-Grant": ",".join(one.grant for one in held),
    }
