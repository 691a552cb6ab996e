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
EVENTS     ``runs.progress/result.*``  1 day: the core consumes results within seconds of their arrival.
REPLIES    ``replies.<platform>.*``    7 days: an adapter that was down posts what it missed.
=========  ==========================  ===================================================================

Every stream drops a repeated ``Nats-Msg-Id`` within ``DUPLICATE_WINDOW_S``; past it, the core decides from
what JetStream still holds (``queued_run_ids``, ``has_result``), not from the window.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
from core.contracts.bus._errors import translated
from core.contracts.messages import DecodeError, RunJob, RunResult, decode
from core.contracts.signing import verify

DAY_S = 24 * 3600
DUPLICATE_WINDOW_S = 120  # Nats-Msg-Id dedupe on every stream
JOBS_MAX_BYTES = 1 << 30  # 1 GiB of waiting jobs (a job is its problem's files plus the source: ~10-100 KB)
DEAD_MAX_AGE_S = 7 * DAY_S
DEAD_MAX_BYTES = 256 << 20
EVENTS_MAX_AGE_S = DAY_S
REPLIES_MAX_AGE_S = 7 * DAY_S


def stream_configs(jobs_max_bytes: int = JOBS_MAX_BYTES) -> list[StreamConfig]:
    return [
        StreamConfig(
            name=subjects.JOBS,
            subjects=[subjects.JOBS_ALL],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            duplicate_window=DUPLICATE_WINDOW_S,
            max_bytes=jobs_max_bytes,
            discard=DiscardPolicy.NEW,
        ),
        StreamConfig(
            name=subjects.JOBS_DLQ,
            subjects=[subjects.DEAD_ALL],
            storage=StorageType.FILE,
            duplicate_window=DUPLICATE_WINDOW_S,
            max_age=DEAD_MAX_AGE_S,
            max_bytes=DEAD_MAX_BYTES,
            discard=DiscardPolicy.OLD,
        ),
        # allow_direct: a worker looks a run's result up by subject, with a permission pinned to result subjects
        StreamConfig(
            name=subjects.EVENTS,
            subjects=[subjects.PROGRESS_ALL, subjects.RESULTS_ALL],
            storage=StorageType.FILE,
            max_age=EVENTS_MAX_AGE_S,
            duplicate_window=DUPLICATE_WINDOW_S,
            allow_direct=True,
        ),
        StreamConfig(
            name=subjects.REPLIES,
            subjects=[subjects.REPLIES_ALL],
            storage=StorageType.FILE,
            max_age=REPLIES_MAX_AGE_S,
            duplicate_window=DUPLICATE_WINDOW_S,
        ),
    ]


class StreamOps:
    """Mixed into ``Bus``: needs its ``_js`` and ``_ensure_buckets`` (``BucketOps``)."""

    _js: Any
    _ensure_buckets: Any

    async def ensure_streams(
        self,
        gpus: Iterable[str],
        *,
        ack_wait_s: float = 30.0,
        max_deliver: int = 3,
        concurrency: dict[str, int] | None = None,
        jobs_max_bytes: int = JOBS_MAX_BYTES,
    ) -> None:
        """Create or update every stream and each GPU pool's job consumer; safe to call at every start.

        ``concurrency`` caps the jobs in flight per pool (``max_ack_pending``); pools not in it are capped
        only by their workers' own concurrency.
        """
        for config in stream_configs(jobs_max_bytes):
            with translated(f"create stream {config.name}"):
                try:
                    await self._js.add_stream(config)
                except nats.js.errors.BadRequestError:  # exists with another configuration: bring it up to date
                    await self._js.update_stream(config)
        for gpu in gpus:
            config = ConsumerConfig(
                durable_name=subjects.runner_durable(gpu),
                filter_subject=subjects.job_subject(gpu),
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=ack_wait_s,
                max_deliver=max_deliver,
                max_ack_pending=(concurrency or {}).get(gpu),
            )
            with translated(f"create the job queue for {gpu}"):
                await self._js.add_consumer(subjects.JOBS, config)  # a durable create also updates
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

    async def has_result(self, run_id: str, key: str) -> bool:
        """Whether a worker's result for this run, signed with the run's ``key``, is stored in EVENTS (consumed or
        not). An unsigned or forged one does not count: it must not stop the run from being evaluated."""
        with translated(f"look for the result of run {run_id}"):
            try:
                msg = await self._js.get_last_msg(subjects.EVENTS, subjects.result_subject(run_id), direct=True)
            except nats.js.errors.NotFoundError:
                return False
        try:
            return verify(decode(RunResult, msg.data or b""), key)
        except DecodeError:
            return False
