"""Streams and consumers: their configuration and retention, and what the core reads from them to recover.

=========  ==========================  ===================================================================
stream     subjects                    retention
=========  ==========================  ===================================================================
JOBS       ``jobs.submit.<gpu>``       work queue: a job leaves once a worker acks it. No age limit (an
                                       accepted job is never dropped silently); at ``JOBS_MAX_BYTES`` new
                                       jobs are refused (``QueueFull``), so the submission is refused too.
JOBS_DLQ   ``jobs.dead.<gpu>``         jobs that used up their deliveries, kept for admins to look at:
                                       ``DEAD_MAX_AGE_S`` (7 days) and ``DEAD_MAX_BYTES``, oldest dropped
                                       first. They hold the kernel's source, so they do not stay forever.
EVENTS     ``runs.progress/result.*``  1 day: the core consumes results within seconds of their arrival. At
                                       ``EVENTS_MAX_BYTES`` new reports are refused (workers publish here:
                                       a flood fills it and stops, rather than pushing real results out).
REPLIES    ``replies.<platform>.*``    7 days: an adapter that was down posts what it missed; at
                                       ``REPLIES_MAX_BYTES`` the oldest replies go first.
=========  ==========================  ===================================================================

Every stream also refuses a message bigger than the server's payload limit (``max_msg_size``), so a later
rise of that limit does not let bigger messages in unnoticed. ``ensure_streams`` brings an existing stream's
configuration up to date at every core start, its replica count included: every stream and bucket keeps
``replicas`` copies (``KERNELRANK_NATS_REPLICAS``: 1 on the embedded server, 3 on a cluster), and NATS moves an
existing one to a new count in place. Consumers keep as many copies as their stream.

Every stream drops a repeated ``Nats-Msg-Id`` within ``DUPLICATE_WINDOW_S``; past it, the core decides from
what JetStream still holds (``queued_run_ids``, ``last_result``), not from the window.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import nats.js.errors
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from core.contracts import subjects
from core.contracts.bus._errors import replicas_checked, translated
from core.contracts.messages import DecodeError, PoolStatus, RunJob, RunProgress, RunResult, decode

DAY_S = 24 * 3600
DUPLICATE_WINDOW_S = 120  # Nats-Msg-Id dedupe on every stream
JOBS_MAX_BYTES = 1 << 30  # 1 GiB of waiting jobs (a job is its problem's files plus the source: ~10-100 KB)
DEAD_MAX_AGE_S = 7 * DAY_S
DEAD_MAX_BYTES = 256 << 20
EVENTS_MAX_AGE_S = DAY_S
EVENTS_MAX_BYTES = 1 << 30  # a day of results and progress is ~10-100 MB; a flood stops here
REPLIES_MAX_AGE_S = 7 * DAY_S
REPLIES_MAX_BYTES = 1 << 30
MAX_MSG_BYTES = 1 << 20  # nats-server's default max_payload


def stream_configs(
    jobs_max_bytes: int = JOBS_MAX_BYTES,
    events_max_bytes: int = EVENTS_MAX_BYTES,
    max_msg_bytes: int = MAX_MSG_BYTES,
    replicas: int = 1,
) -> list[StreamConfig]:
    configs = [
        StreamConfig(
            name=subjects.JOBS,
            subjects=[subjects.JOBS_ALL],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            duplicate_window=DUPLICATE_WINDOW_S,
            max_bytes=jobs_max_bytes,
            max_msg_size=max_msg_bytes,
            discard=DiscardPolicy.NEW,
        ),
        StreamConfig(
            name=subjects.JOBS_DLQ,
            subjects=[subjects.DEAD_ALL],
            storage=StorageType.FILE,
            duplicate_window=DUPLICATE_WINDOW_S,
            max_age=DEAD_MAX_AGE_S,
            max_bytes=DEAD_MAX_BYTES,
            max_msg_size=max_msg_bytes,
            discard=DiscardPolicy.OLD,
        ),
        # allow_direct: a worker looks its own results up by subject, with a permission pinned to its subjects
        StreamConfig(
            name=subjects.EVENTS,
            subjects=[subjects.PROGRESS_ALL, subjects.RESULTS_ALL],
            storage=StorageType.FILE,
            max_age=EVENTS_MAX_AGE_S,
            max_bytes=events_max_bytes,
            max_msg_size=max_msg_bytes,
            discard=DiscardPolicy.NEW,
            duplicate_window=DUPLICATE_WINDOW_S,
            allow_direct=True,
        ),
        StreamConfig(
            name=subjects.REPLIES,
            subjects=[subjects.REPLIES_ALL],
            storage=StorageType.FILE,
            max_age=REPLIES_MAX_AGE_S,
            max_bytes=REPLIES_MAX_BYTES,
            max_msg_size=max_msg_bytes,
            discard=DiscardPolicy.OLD,
            duplicate_window=DUPLICATE_WINDOW_S,
        ),
    ]
    for config in configs:
        config.num_replicas = replicas
    return configs


class StreamOps:
    """Mixed into ``Bus``: needs its ``_js`` and ``_ensure_buckets`` (``BucketOps``)."""

    _js: Any
    _nc: Any
    _ensure_buckets: Any
    _worker_key: str
    _replicas: int

    async def ensure_streams(
        self,
        gpus: Iterable[str],
        *,
        ack_wait_s: float = 30.0,
        max_deliver: int = 3,
        concurrency: dict[str, int] | None = None,
        jobs_max_bytes: int = JOBS_MAX_BYTES,
        events_max_bytes: int = EVENTS_MAX_BYTES,
        replicas: int = 1,
    ) -> None:
        """Create or update every stream, bucket and each GPU pool's job consumer; safe to call at every start.

        ``concurrency`` caps the jobs in flight per pool (``max_ack_pending``); pools not in it are capped
        only by their workers' own concurrency. ``replicas`` is how many servers keep a copy of each stream and
        bucket; a count the cluster cannot satisfy is a ``BusError`` naming the setting.
        """
        self._replicas = replicas
        for config in stream_configs(jobs_max_bytes, events_max_bytes, self._nc.max_payload, replicas):
            with replicas_checked(f"stream {config.name}", replicas):
                try:
                    await self._js.add_stream(config)
                except nats.js.errors.BadRequestError:  # exists with another configuration: bring it up to date
                    await self._js.update_stream(config)
        for gpu in gpus:
            consumer = ConsumerConfig(
                durable_name=subjects.runner_durable(gpu),
                filter_subject=subjects.job_subject(gpu),
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=ack_wait_s,
                max_deliver=max_deliver,
                max_ack_pending=(concurrency or {}).get(gpu),
            )
            with translated(f"create the job queue for {gpu}"):
                await self._js.add_consumer(subjects.JOBS, consumer)  # a durable create also updates
        await self._ensure_buckets()

    async def queued_run_ids(self) -> set[str]:
        """Run ids of every job JOBS holds: waiting for a worker, or delivered and not yet acknowledged."""
        found: set[str] = set()
        with translated("list the queued jobs"):
            seq = 1
            while True:
                try:
                    msg = await self._js.get_msg(subjects.JOBS, seq, subject=subjects.JOBS_ALL, next=True)
                except nats.js.errors.NotFoundError:
                    return found
                run_id = (msg.headers or {}).get("Nats-Msg-Id")
                if not run_id:
                    try:
                        run_id = decode(RunJob, msg.data or b"").run_id
                    except DecodeError:
                        run_id = ""
                if run_id:
                    found.add(run_id)
                seq = (msg.seq or seq) + 1

    async def last_result(self, run_id: str) -> RunResult | None:
        """The newest result any worker stored for this run (its ``worker`` checked against its subject), unverified."""
        return await self._last(subjects.any_result_subject(run_id), RunResult, f"the result of run {run_id}")

    async def consumed_result(self, run_id: str) -> RunResult | None:
        """The run's newest result if the core's result consumer acknowledged it already, so it will not be delivered
        again: what a database restored from a backup missed. Unverified, like ``last_result``."""
        with translated(f"look for the result of run {run_id}"):
            try:
                msg = await self._js.get_last_msg(subjects.EVENTS, subjects.any_result_subject(run_id), direct=True)
                floor = (await self._js.consumer_info(subjects.EVENTS, subjects.CORE_RESULTS)).ack_floor
            except nats.js.errors.NotFoundError:
                return None
        if floor is None or msg.seq is None or msg.seq > (floor.stream_seq or 0):
            return None  # the consumer has yet to deliver it (or redeliver it): it is recorded then
        try:
            report = decode(RunResult, msg.data or b"")
        except DecodeError:
            return None
        return report if names_publisher(msg.subject, report) else None

    async def last_progress(self, worker: str, run_id: str) -> RunProgress | None:
        """The newest progress event ``worker`` stored for this run, unverified."""
        return await self._last(subjects.progress_subject(worker, run_id), RunProgress, f"the progress of run {run_id}")

    async def _last(self, subject: str, cls: type[Report], what: str) -> Report | None:
        with translated(f"look for {what}"):
            try:
                msg = await self._js.get_last_msg(subjects.EVENTS, subject, direct=True)
            except nats.js.errors.NotFoundError:
                return None
        try:
            report = decode(cls, msg.data or b"")
        except DecodeError:
            return None
        return report if names_publisher(msg.subject, report) else None


Report = TypeVar("Report", RunResult, RunProgress)


def names_publisher(subject: str, report: RunResult | RunProgress | PoolStatus) -> bool:
    """Whether a worker's message names the worker whose subject it came on (which NATS pins to its user)."""
    return subjects.publisher(subject) == subjects.worker_token(report.worker)
