"""Durable pull consumption: deliveries, the puller, and background work the bus runs (``Running``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from core.contracts.bus._errors import BusError, translated
from core.contracts.bus._link import while_reconnecting
from core.contracts.messages import DecodeError, decode
from core.contracts.tasks import cancel_and_wait

log = logging.getLogger(__name__)

T = TypeVar("T")
Check = Callable[[str, Any], bool]  # (subject, decoded message) -> whether the message may be handled
ACK_TIMEOUT_S = 5.0  # how long an ack_sync waits for the server's confirmation
ACK_RETRY_S = 10.0  # how long an unconfirmed ack_sync is repeated while NATS is unreachable
SPARE_FOR = 0.5  # a message fetched beyond what was asked is kept for this share of ack_wait


@dataclass
class Delivery(Generic[T]):
    """One decoded message from a durable pull consumer; settle it once (ack or nak)."""

    message: T
    deliveries: int  # 1 on the first delivery, counting redeliveries after that
    _msg: Msg = field(repr=False)

    async def ack(self, *, sync: bool = True) -> None:
        """Acknowledge; with ``sync``, wait until the server confirms (the message will not come back).

        Without it, a lost acknowledgement brings the message back after ack_wait: use that only where a
        repeat is harmless, and save the round trip.
        """
        if not sync:
            with translated("acknowledge a message"):
                await self._msg.ack()
            return
        # An acknowledgement is idempotent: repeat it while NATS comes back, or the job would run again.
        await while_reconnecting(
            "acknowledge a message", lambda: self._msg.ack_sync(timeout=ACK_TIMEOUT_S), for_s=ACK_RETRY_S
        )

    async def nak(self, delay_s: float | None = None) -> None:
        """Give the message back for redelivery, after ``delay_s`` seconds when given."""
        with translated("return a message"):
            await self._msg.nak(delay=delay_s)

    async def in_progress(self) -> None:
        """Heartbeat: restart the consumer's ack_wait clock for this message."""
        with translated("extend a message's deadline"):
            await self._msg.in_progress()


class Puller(Generic[T]):
    """Fetches decoded deliveries from one durable pull consumer; undecodable messages, and those the ``check``
    refuses (a report whose body names another worker than its subject), are term()'d and logged.

    nats-py's ``fetch(n)`` first drains what earlier pull requests left behind (messages the server sent
    just as a request expired), so it can return more than ``n``. A caller that asked for ``n`` gets ``n``;
    the rest wait here for its next fetch, and one that waited close to ack_wait is let go (the server
    hands it out again), so no job is run by two workers because it sat here.
    """

    def __init__(
        self,
        sub: Any,
        cls: type[T],
        *,
        ack_wait_s: float,
        max_deliver: int,
        clock: Callable[[], float] = time.monotonic,
        check: Check | None = None,
    ) -> None:
        self._sub = sub
        self._check = check
        self._cls = cls
        self.ack_wait_s = ack_wait_s
        self.max_deliver = max_deliver
        self._clock = clock
        self._spare: list[tuple[float, Msg]] = []

    async def fetch(self, batch: int, timeout_s: float, *, stop: asyncio.Event | None = None) -> list[Delivery[T]]:
        """Up to ``batch`` deliveries; an empty list when none arrived within ``timeout_s``, or as soon as ``stop``
        is set (a stopping loop need not wait out an idle fetch)."""
        now = self._clock()
        spare = [(at, msg) for at, msg in self._spare if now - at < SPARE_FOR * self.ack_wait_s]
        msgs, self._spare = [msg for _, msg in spare[:batch]], spare[batch:]
        if not msgs:
            with translated("fetch messages"):
                try:
                    msgs = await _unless(stop, self._sub.fetch(batch, timeout=timeout_s))
                except TimeoutError:  # nats-py raises its own or asyncio's, depending on where it waited
                    return []  # an idle queue: the normal case, not a failure
            self._spare += [(now, msg) for msg in msgs[batch:]]
            msgs = msgs[:batch]
        deliveries = []
        for msg in msgs:
            try:
                message = decode(self._cls, msg.data)
            except DecodeError as exc:
                log.error(
                    "dropping an unreadable %s on %s (stream seq %s): %s",
                    self._cls.__name__,
                    msg.subject,
                    msg.metadata.sequence.stream,
                    exc,
                )
                with translated("drop an unreadable message"):
                    await msg.term()
                continue
            if self._check is not None and not self._check(msg.subject, message):
                log.warning("dropping a %s on %s: its body names another sender", self._cls.__name__, msg.subject)
                with translated("drop a refused message"):
                    await msg.term()
                continue
            deliveries.append(Delivery(message, msg.metadata.num_delivered, msg))
        return deliveries

    async def close(self) -> None:
        with contextlib.suppress(nats.errors.Error):
            await self._sub.unsubscribe()


async def _unless(stop: asyncio.Event | None, fetching: Awaitable[list[Msg]]) -> list[Msg]:
    """What ``fetching`` returns, or nothing once ``stop`` is set first. A fetch cut short acknowledged nothing:
    the messages it had pulled come back after ack_wait. One that ended as it was cut short (Python 3.11's
    ``wait_for`` inside nats-py can swallow the cancellation) still returns its messages."""
    if stop is None:
        return await fetching
    fetch = asyncio.ensure_future(fetching)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({fetch, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not fetch.done():
            with contextlib.suppress(Exception):  # its own failure is raised below, never in a cancellation's place
                await cancel_and_wait(fetch)
    return [] if fetch.cancelled() else fetch.result()


class Running:
    """Background work the bus runs for you; ``stop()`` ends it and is safe to call twice."""

    def __init__(self, registry: set[Running]) -> None:
        self._registry = registry
        registry.add(self)

    async def stop(self) -> None:
        self._registry.discard(self)
        await self._stop()

    async def _stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Running:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


class Served(Running):
    """A core subscription whose callback may have spawned handler tasks still in flight."""

    def __init__(self, registry: set[Running]) -> None:
        super().__init__(registry)
        self.sub: Subscription | None = None
        self.more: list[Subscription] = []  # further subscriptions serving the same work
        self.tasks: set[asyncio.Task[None]] = set()

    async def _stop(self) -> None:
        subs, self.sub, self.more = [self.sub, *self.more], None, []
        for sub in subs:
            if sub is not None:
                with contextlib.suppress(nats.errors.Error):
                    await sub.unsubscribe()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)


class Consumer(Running, Generic[T]):
    """A durable pull loop: fetch a batch, hand it to the handler, ack it all only after the handler returns.

    A handler that raises gets the batch back later (nak with a delay): nothing is lost. ``stop()``
    lets the batch in hand finish, ends an idle fetch at once, then unsubscribes.
    ``ack_sync`` False acknowledges without waiting for the server: for handlers a repeat does not harm.
    """

    def __init__(
        self,
        registry: set[Running],
        puller: Puller[T],
        handler: Callable[[list[T]], Awaitable[None]],
        *,
        batch: int,
        nak_delay_s: float,
        poll_s: float,
        ack_sync: bool = True,
    ) -> None:
        super().__init__(registry)
        self._puller, self._handler = puller, handler
        self._batch, self._nak_delay_s, self._poll_s, self._ack_sync = batch, nak_delay_s, poll_s, ack_sync
        self._stopping = asyncio.Event()
        self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                deliveries = await self._puller.fetch(self._batch, self._poll_s, stop=self._stopping)
            except BusError as exc:
                log.warning("consumer fetch failed, retrying: %s", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self._poll_s)
                continue
            if deliveries:
                await self._settle(deliveries)

    async def _settle(self, deliveries: list[Delivery[T]]) -> None:
        try:
            await self._handler([d.message for d in deliveries])
        except Exception:
            log.exception(
                "handler failed on a batch of %d; it will be redelivered in %.1f s", len(deliveries), self._nak_delay_s
            )
            outcomes = await asyncio.gather(*(d.nak(self._nak_delay_s) for d in deliveries), return_exceptions=True)
        else:
            outcomes = await asyncio.gather(*(d.ack(sync=self._ack_sync) for d in deliveries), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                log.warning("could not settle a message (it will come back after ack_wait): %s", outcome)

    async def _stop(self) -> None:
        self._stopping.set()
        await self._task
        await self._puller.close()
