"""The bus's operations on jobs that used up their deliveries (used by ``core.service.deadletter``)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg

from core.contracts import subjects
from core.contracts.bus._consumers import Running, Served
from core.contracts.bus._errors import translated
from core.contracts.messages import DecodeError, RunJob, decode, encode

log = logging.getLogger(__name__)


class DeadLetterOps:
    """Mixed into ``Bus``: needs its ``_nc``, ``_js`` and ``_running``."""

    _nc: Client
    _js: Any
    _running: set[Running]

    async def watch_max_deliveries(self, on_advisory: Callable[[int, int], Awaitable[None]]) -> Running:
        """Call ``on_advisory(stream_seq, deliveries)`` when a job consumer gives up on a message."""
        served = Served(self._running)

        async def on_message(msg: Msg) -> None:
            try:
                advisory = json.loads(msg.data)
                await on_advisory(int(advisory["stream_seq"]), int(advisory["deliveries"]))
            except Exception:
                log.exception("could not handle the advisory %r", msg.data[:500])

        with translated("watch for failed jobs"):
            served.sub = await self._nc.subscribe(subjects.MAX_DELIVERIES_ADVISORY, cb=on_message)
            await self._nc.flush()
        return served

    async def stranded_jobs(self) -> list[tuple[int, int]]:
        """``(stream_seq, deliveries)`` of jobs their pool's consumer will never deliver again.

        A job that used up its deliveries stays in the work queue. When a pool has nothing in flight or
        awaiting redelivery, every job it already delivered that is still stored is such a job.
        """
        with translated("look for failed jobs"):
            stranded = []
            for info in await self._js.consumers_info(subjects.JOBS):
                delivered = info.delivered.stream_seq if info.delivered else 0
                if info.num_ack_pending or not delivered or not info.config.filter_subject:
                    continue
                seq = 1
                while True:
                    try:
                        msg = await self._js.get_msg(subjects.JOBS, seq, subject=info.config.filter_subject, next=True)
                    except nats.js.errors.NotFoundError:
                        break
                    if msg.seq is None or msg.seq > delivered:
                        break
                    stranded.append((msg.seq, info.config.max_deliver or 0))
                    seq = msg.seq + 1
            return stranded

    async def dead_letter_job(self, stream_seq: int, deliveries: int) -> bytes | None:
        """Copy a job, less its secrets (``redacted``), to ``jobs.dead.<gpu>``; return its full payload, or ``None``
        when it is no longer queued."""
        with translated(f"dead-letter job {stream_seq}"):
            try:
                msg = await self._js.get_msg(subjects.JOBS, stream_seq)
            except nats.js.errors.NotFoundError:
                return None
            data = msg.data or b""
            headers = {"x-orig-seq": str(stream_seq), "x-deliveries": str(deliveries)}
            msg_id = (msg.headers or {}).get("Nats-Msg-Id")
            if msg_id:
                headers["Nats-Msg-Id"] = msg_id
            await self._js.publish(subjects.dead_subject(msg.subject or ""), redacted(data), headers=headers)
            return data

    async def delete_job(self, stream_seq: int) -> None:
        with translated(f"delete job {stream_seq}"), contextlib.suppress(nats.js.errors.NotFoundError):
            await self._js.delete_msg(subjects.JOBS, stream_seq)


def redacted(payload: bytes) -> bytes:
    """What the dead-letter stream keeps of a job: who to tell and what failed, never the kernel's source, the
    problem's files, the leaderboard's secret seed or the run's result key (the database keeps the source)."""
    try:
        job = decode(RunJob, payload)
    except DecodeError:
        return b""  # unreadable: it may hold anything, so keep none of it
    problem = dataclasses.replace(job.job.problem, files={})
    evaluation = dataclasses.replace(job.job, problem=problem, submission_source="", secret_seed=None)
    return encode(dataclasses.replace(job, job=evaluation, result_key=""))
