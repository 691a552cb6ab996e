"""Following one filtered subject of a stream: stored messages first, then live ones, in order.

nats-py's ordered consumer would do, but it creates its consumer through the request subject that does
not name the filter, so a role allowed to follow ``replies.cli.>`` could follow any platform's replies.
This follower names its consumer, which makes nats-py use ``$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>``:
a permission on that subject pins the filter (``core.contracts.roles``).

The consumer is ephemeral (push, no acks, in memory) and delivers to this connection's own inbox. When
it skips a message (a consumer sequence gap) or falls silent past its heartbeats (the server restarted
and lost it), the follower replaces it with one that starts after the last message it passed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from core.contracts.bus._errors import translated
from core.contracts.bus._link import while_reconnecting

HEARTBEAT_S = 2.0  # the server's idle heartbeat to a quiet follower
SILENT_S = 3 * HEARTBEAT_S  # no message and no heartbeat for this long: the consumer is gone
INACTIVE_S = 60.0  # the server drops a consumer nobody has listened to for this long
CREATE_RETRY_S = 30.0  # a cluster that lost the stream's leader answers again once it has elected another


async def follow(
    nc: Client, js: Any, stream: str, subject: str, *, poll_s: float, closing: Callable[[], bool]
) -> AsyncGenerator[Msg, None]:
    """Every message on ``subject`` in ``stream``, from the first stored one on, until ``closing()``."""
    next_seq = 0  # the stream sequence to start from when (re)creating; 0: the first
    loop = asyncio.get_running_loop()
    while not closing():
        with translated("follow replies"):
            sub = await nc.subscribe(nc.new_inbox())
        try:
            config = _config(subject, sub.subject, next_seq)  # one name: a repeated create is the same consumer
            await while_reconnecting(
                "follow replies", functools.partial(js.add_consumer, stream, config), for_s=CREATE_RETRY_S
            )
            expected, heard = 1, loop.time()
            while not closing():
                with translated("read replies"):
                    try:
                        msg = await sub.next_msg(timeout=poll_s)
                    except nats.errors.TimeoutError:
                        msg = None
                _raise_if_cancelled()
                if msg is None:
                    if loop.time() - heard > SILENT_S:
                        break  # lost: replace the consumer
                    continue
                heard = loop.time()
                if msg.headers and msg.headers.get("Status"):
                    continue  # an idle heartbeat
                sequence = msg.metadata.sequence
                if sequence.consumer != expected:
                    break  # a gap: replace the consumer from the last message passed on
                expected += 1
                next_seq = sequence.stream + 1
                yield msg
        finally:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()


def _raise_if_cancelled() -> None:
    """Honour a cancellation that ``next_msg`` lost: on Python 3.11 its inner ``wait_for`` returns a message that
    arrived as the cancellation did and drops the cancellation, so a follower cancelled just as a heartbeat came
    (``asyncio.wait_for(anext(follower), ...)``) would otherwise read on forever, its canceller waiting for it."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _config(subject: str, inbox: str, start_seq: int) -> ConsumerConfig:
    return ConsumerConfig(
        name=uuid.uuid4().hex,
        filter_subject=subject,
        deliver_subject=inbox,
        ack_policy=AckPolicy.NONE,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE if start_seq else DeliverPolicy.ALL,
        opt_start_seq=start_seq or None,
        idle_heartbeat=HEARTBEAT_S,
        inactive_threshold=INACTIVE_S,
        mem_storage=True,
        num_replicas=1,
    )
