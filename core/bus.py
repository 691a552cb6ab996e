"""The NATS bus: the one module (with ``core.natsserver``) that speaks nats-py.

Every process talks to the others through a ``Bus``: commands by request-reply, jobs through a
JetStream work queue per GPU pool, progress, results and replies through durable streams. Subject and
stream names come from ``core.subjects``. Payloads are ``core.messages`` dataclasses, JSON on the wire.

Errors, all raised from here, messages safe to show to a user::

    BusError              the bus could not do what was asked
    ├── BusUnavailable    no NATS server at the URL, or the connection is gone
    └── CoreUnavailable   NATS is up, but no core answered a command in time

Background work (a command server, a durable pull loop, an advisory watcher) is a ``Running``: stop it
with ``await running.stop()`` or use it as an async context manager; ``Bus.close()`` stops what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.kv import KeyValue

from core import subjects
from core.messages import (
    Command,
    DecodeError,
    Platform,
    PoolStatus,
    Reply,
    ReplyTo,
    RunJob,
    RunProgress,
    RunResult,
    decode,
    encode,
)
from core.report import error_reply

log = logging.getLogger(__name__)

T = TypeVar("T")

DAY_S = 24 * 3600
DUPLICATE_WINDOW_S = 120       # Nats-Msg-Id dedupe on every stream
ACK_TIMEOUT_S = 5.0            # how long an ack_sync waits for the server's confirmation
RECONNECT_WAIT_S = 0.5
FOLLOW_POLL_S = 0.5            # a reply follower notices Bus.close() within this long
# Modal keeps a call's output for 7 days: a call id older than that is of no use to a worker re-attaching.
RUNNER_CALLS_CONFIG = KeyValueConfig(bucket=subjects.RUNNER_CALLS, history=1, ttl=7 * DAY_S,
                                     storage=StorageType.FILE)
NOT_RUNNING = "kernelrank is not running (no core answered). Start it with `kernelrank up`, then try again."


class BusError(Exception):
    """The bus could not do what was asked; the message says what to do."""


class BusUnavailable(BusError):
    """No NATS server at the URL, or the connection to it is gone."""


class CoreUnavailable(BusError):
    """NATS is reachable but no core answered the command."""


@contextlib.contextmanager
def _translated(action: str) -> Iterator[None]:
    """Turn nats-py's errors into the bus's hierarchy, keeping the original as the cause."""
    try:
        yield
    except BusError:
        raise
    except nats.js.errors.NoStreamResponseError as exc:
        raise BusError(f"cannot {action}: no stream stores it yet (the core creates them when it starts).") from exc
    except nats.js.errors.APIError as exc:
        raise BusError(f"cannot {action}: NATS refused ({exc.description or exc}).") from exc
    except (nats.errors.ConnectionClosedError, nats.errors.NoServersError, nats.errors.StaleConnectionError,
            nats.errors.ConnectionDrainingError, nats.errors.ConnectionReconnectingError) as exc:
        raise BusUnavailable(f"cannot {action}: the connection to NATS is closed or reconnecting.") from exc
    except TimeoutError as exc:
        raise BusUnavailable(f"cannot {action}: NATS did not answer in time; is it overloaded or restarting?") \
            from exc
    except nats.errors.Error as exc:
        raise BusError(f"cannot {action}: {exc}") from exc


@dataclass
class Delivery(Generic[T]):
    """One decoded message from a durable pull consumer; settle it once (ack or nak)."""

    message: T
    deliveries: int                      # 1 on the first delivery, counting redeliveries after that
    _msg: Msg = field(repr=False)

    async def ack(self) -> None:
        """Acknowledge and wait until the server confirms: the message will not come back."""
        with _translated("acknowledge a message"):
            await self._msg.ack_sync(timeout=ACK_TIMEOUT_S)

    async def nak(self, delay_s: float | None = None) -> None:
        """Give the message back for redelivery, after ``delay_s`` seconds when given."""
        with _translated("return a message"):
            await self._msg.nak(delay=delay_s)

    async def in_progress(self) -> None:
        """Heartbeat: restart the consumer's ack_wait clock for this message."""
        with _translated("extend a message's deadline"):
            await self._msg.in_progress()


class Puller(Generic[T]):
    """Fetches decoded deliveries from one durable pull consumer; undecodable messages are term()'d."""

    def __init__(self, sub: Any, cls: type[T], *, ack_wait_s: float, max_deliver: int) -> None:
        self._sub = sub
        self._cls = cls
        self.ack_wait_s = ack_wait_s
        self.max_deliver = max_deliver

    async def fetch(self, batch: int, timeout_s: float) -> list[Delivery[T]]:
        """Up to ``batch`` deliveries; an empty list when none arrived within ``timeout_s``."""
        with _translated("fetch messages"):
            try:
                msgs = await self._sub.fetch(batch, timeout=timeout_s)
            except TimeoutError:          # nats-py raises its own or asyncio's, depending on where it waited
                return []                 # an idle queue: the normal case, not a failure
        deliveries = []
        for msg in msgs:
            try:
                message = decode(self._cls, msg.data)
            except DecodeError as exc:
                log.error("dropping an unreadable %s on %s (stream seq %s): %s", self._cls.__name__, msg.subject,
                          msg.metadata.sequence.stream, exc)
                with _translated("drop an unreadable message"):
                    await msg.term()
                continue
            deliveries.append(Delivery(message, msg.metadata.num_delivered, msg))
        return deliveries

    async def close(self) -> None:
        with contextlib.suppress(nats.errors.Error):
            await self._sub.unsubscribe()


class JsonBucket:
    """A JetStream KV bucket holding JSON objects by key; keys go through ``subjects.token``."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored object, or ``None`` when there is none (or it cannot be read)."""
        with _translated(f"read {key}"):
            try:
                entry = await self._kv.get(subjects.token(key))
            except nats.js.errors.KeyNotFoundError:           # KeyDeletedError included
                return None
        try:
            value = json.loads(entry.value or b"")
        except ValueError:
            log.warning("ignoring an unreadable entry %s in a KV bucket", key)
            return None
        return value if isinstance(value, dict) else None

    async def put(self, key: str, value: dict[str, Any]) -> None:
        with _translated(f"store {key}"):
            await self._kv.put(subjects.token(key), json.dumps(value).encode())

    async def delete(self, key: str) -> None:
        with _translated(f"delete {key}"):
            await self._kv.delete(subjects.token(key))


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


class _Served(Running):
    """A core subscription whose callback may have spawned handler tasks still in flight."""

    def __init__(self, registry: set[Running]) -> None:
        super().__init__(registry)
        self.sub: Subscription | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def _stop(self) -> None:
        sub, self.sub = self.sub, None
        if sub is not None:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)


class Consumer(Running, Generic[T]):
    """A durable pull loop: fetch a batch, hand it to the handler, ack it all only after the handler returns.

    A handler that raises gets the batch back later (nak with a delay): nothing is lost. ``stop()``
    lets the batch in hand finish, then unsubscribes; it waits at most ``poll_s`` for an idle fetch.
    """

    def __init__(self, registry: set[Running], puller: Puller[T], handler: Callable[[list[T]], Awaitable[None]],
                 *, batch: int, nak_delay_s: float, poll_s: float) -> None:
        super().__init__(registry)
        self._puller, self._handler = puller, handler
        self._batch, self._nak_delay_s, self._poll_s = batch, nak_delay_s, poll_s
        self._stopping = asyncio.Event()
        self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                deliveries = await self._puller.fetch(self._batch, self._poll_s)
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
            log.exception("handler failed on a batch of %d; it will be redelivered in %.1f s",
                          len(deliveries), self._nak_delay_s)
            outcomes = await asyncio.gather(*(d.nak(self._nak_delay_s) for d in deliveries), return_exceptions=True)
        else:
            outcomes = await asyncio.gather(*(d.ack() for d in deliveries), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                log.warning("could not settle a message (it will come back after ack_wait): %s", outcome)

    async def _stop(self) -> None:
        self._stopping.set()
        await self._task
        await self._puller.close()


class Ledger:
    """A small record of facts that must outlive a process (a JetStream key-value bucket with a TTL).

    Chat adapters keep their delivery bookkeeping here (replies already posted, the platform's id of a
    message to update, events already handled) so a restart neither loses nor doubles a message.
    Keys may hold any characters: each is stored under ``subjects.token(key)``.
    """

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, key: str) -> bytes | None:
        with _translated("read the delivery ledger"):
            try:
                entry = await self._kv.get(subjects.token(key))
            except nats.js.errors.KeyNotFoundError:
                return None
        return entry.value

    async def put(self, key: str, value: bytes) -> None:
        with _translated("write the delivery ledger"):
            await self._kv.put(subjects.token(key), value)

    async def claim(self, key: str, value: bytes = b"1") -> bool:
        """Record ``key`` unless it is there already; ``True`` only for the first caller (atomic)."""
        with _translated("write the delivery ledger"):
            try:
                await self._kv.create(subjects.token(key), value)
            except nats.js.errors.KeyWrongLastSequenceError:
                return False
        return True


class Bus:
    """A connection to NATS with kernelrank's operations on it. Create with ``await Bus.connect(url, name)``."""

    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._running: set[Running] = set()
        self._follows: set[Any] = set()
        self._closing = False

    @classmethod
    async def connect(cls, url: str, name: str) -> Bus:
        """Connect, failing fast when no server answers; once connected, reconnect for as long as it takes."""
        async def on_error(exc: Exception) -> None:
            log.debug("NATS %s: %s", name, exc)

        async def on_disconnect() -> None:
            if not (nc.is_closed or nc.is_draining):      # a close we asked for is no news
                log.warning("%s lost its NATS connection; reconnecting", name)

        async def on_reconnect() -> None:
            log.info("%s reconnected to NATS", name)

        nc = Client()
        try:
            await nc.connect(url, name=name, connect_timeout=2, max_reconnect_attempts=1,
                             reconnect_time_wait=RECONNECT_WAIT_S, drain_timeout=5, error_cb=on_error,
                             disconnected_cb=on_disconnect, reconnected_cb=on_reconnect)
        except (TimeoutError, OSError, nats.errors.Error) as exc:
            raise BusUnavailable(f"cannot reach NATS at {url}: is kernelrank running? Start it with "
                                 "`kernelrank up`, or set KERNELRANK_NATS_URL to a running NATS.") from exc
        nc.options["max_reconnect_attempts"] = -1   # the first attempt fails fast; later ones never give up
        return cls(nc)

    # ----- set-up -------------------------------------------------------------------------------

    async def ensure_streams(self, gpus: Iterable[str], *, ack_wait_s: float = 30.0, max_deliver: int = 3,
                             concurrency: dict[str, int] | None = None) -> None:
        """Create or update every stream and each GPU pool's job consumer; safe to call at every start.

        ``concurrency`` caps the jobs in flight per pool (``max_ack_pending``); pools not in it are capped
        only by their workers' own concurrency.
        """
        streams = [
            StreamConfig(name=subjects.JOBS, subjects=[subjects.JOBS_ALL], retention=RetentionPolicy.WORK_QUEUE,
                         storage=StorageType.FILE, duplicate_window=DUPLICATE_WINDOW_S),
            StreamConfig(name=subjects.JOBS_DLQ, subjects=[subjects.DEAD_ALL], storage=StorageType.FILE,
                         duplicate_window=DUPLICATE_WINDOW_S),
            StreamConfig(name=subjects.EVENTS, subjects=[subjects.PROGRESS_ALL, subjects.RESULTS_ALL],
                         storage=StorageType.FILE, max_age=DAY_S, duplicate_window=DUPLICATE_WINDOW_S),
            StreamConfig(name=subjects.REPLIES, subjects=[subjects.REPLIES_ALL], storage=StorageType.FILE,
                         max_age=7 * DAY_S, duplicate_window=DUPLICATE_WINDOW_S),
        ]
        for config in streams:
            with _translated(f"create stream {config.name}"):
                try:
                    await self._js.add_stream(config)
                except nats.js.errors.BadRequestError:   # exists with another configuration: bring it up to date
                    await self._js.update_stream(config)
        for gpu in gpus:
            config = ConsumerConfig(durable_name=subjects.runner_durable(gpu), filter_subject=subjects.job_subject(gpu),
                                    ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
                                    ack_wait=ack_wait_s, max_deliver=max_deliver,
                                    max_ack_pending=(concurrency or {}).get(gpu))
            with _translated(f"create the job queue for {gpu}"):
                await self._js.add_consumer(subjects.JOBS, config)   # a durable create also updates
        with _translated("create the runner calls bucket"):
            try:
                await self._js.create_key_value(RUNNER_CALLS_CONFIG)
            except nats.js.errors.BadRequestError as exc:     # made by another version: its entries still serve
                log.warning("keeping the existing %s bucket (%s)", subjects.RUNNER_CALLS, exc.description or exc)

    # ----- commands: request-reply --------------------------------------------------------------

    async def request(self, command: Command, timeout_s: float = 5.0) -> Reply:
        """Ask the core; ``CoreUnavailable`` at once when no core is subscribed, or after ``timeout_s``."""
        with _translated("send the command"):
            try:
                msg = await self._nc.request(subjects.COMMANDS, encode(command), timeout=timeout_s)
            except nats.errors.NoRespondersError as exc:
                raise CoreUnavailable(NOT_RUNNING) from exc
            except nats.errors.TimeoutError as exc:
                raise CoreUnavailable(f"kernelrank did not answer within {timeout_s:g} s; it may be busy or "
                                      "restarting. Try again in a minute.") from exc
        try:
            return decode(Reply, msg.data)
        except DecodeError as exc:
            log.error("unreadable reply to command %s: %s", command.id, exc)
            raise BusError("kernelrank answered in a format this client cannot read; update the client.") from exc

    async def serve_commands(self, handler: Callable[[Command], Awaitable[Reply]], *,
                             max_in_flight: int = 256) -> Running:
        """Answer commands (queue group ``core``) with up to ``max_in_flight`` handlers running at once.

        An unreadable request or a handler that raises gets an error ``Reply``; the server never stops.
        """
        served = _Served(self._running)
        slots = asyncio.Semaphore(max_in_flight)

        async def answer(msg: Msg) -> None:
            try:
                try:
                    command = decode(Command, msg.data)
                except DecodeError as exc:
                    log.warning("unreadable command: %s", exc)
                    reply = error_reply(ReplyTo(platform=Platform.CLI), "kernelrank could not read that request "
                                        "(is this client older or newer than the server?); update it and try again.")
                else:
                    reply = await _answer_safely(handler, command)
                if msg.reply:
                    await msg.respond(encode(reply))
            except Exception:
                log.exception("could not answer a command")
            finally:
                slots.release()

        async def on_message(msg: Msg) -> None:
            await slots.acquire()
            task = asyncio.create_task(answer(msg))
            served.tasks.add(task)
            task.add_done_callback(served.tasks.discard)

        with _translated("serve commands"):
            served.sub = await self._nc.subscribe(subjects.COMMANDS, queue=subjects.CORE_QUEUE, cb=on_message)
            await self._nc.flush()       # the server knows the subscription before we report ready
        return served

    # ----- publishing ---------------------------------------------------------------------------

    async def publish_job(self, job: RunJob) -> bool:
        """Queue a job for its GPU pool; ``False`` when a job with this run id was queued in the last 2 min."""
        ack = await self._publish(subjects.job_subject(job.gpu), job, msg_id=job.run_id)
        return not ack.duplicate

    async def publish_progress(self, progress: RunProgress) -> None:
        await self._publish(subjects.progress_subject(progress.run_id), progress)

    async def publish_result(self, result: RunResult) -> None:
        await self._publish(subjects.result_subject(result.run_id), result, msg_id=result.run_id)

    async def publish_reply(self, reply: Reply) -> None:
        """Store a reply on its platform's durable subject; the reply id makes a repeat a no-op.

        Progress updates (``final`` False) go out without waiting for the stream's acknowledgement: the
        stream still stores them, and one lost update is replaced by the next, so the round trip is not
        worth its cost on the core's busiest path.
        """
        subject = subjects.reply_subject(reply.reply_to.platform.value, reply.reply_to.channel)
        if reply.final:
            await self._publish(subject, reply, msg_id=reply.id)
        else:
            with _translated(f"publish on {subject}"):
                await self._nc.publish(subject, encode(reply))

    async def publish_pool_status(self, status: PoolStatus) -> None:
        """A worker's periodic report; plain NATS (no stream): only the latest one matters."""
        subject = subjects.pool_status_subject(status.gpu)
        with _translated(f"publish on {subject}"):
            await self._nc.publish(subject, encode(status))

    async def _publish(self, subject: str, message: Any, msg_id: str = "") -> Any:
        with _translated(f"publish on {subject}"):
            return await self._js.publish(subject, encode(message), headers={"Nats-Msg-Id": msg_id} if msg_id else None)

    # ----- consuming ----------------------------------------------------------------------------

    async def jobs(self, gpu: str) -> Puller[RunJob]:
        """The shared pull consumer of one GPU pool's jobs; ``BusError`` until the core has created it."""
        return await self._bind(subjects.JOBS, subjects.runner_durable(gpu), RunJob,
                                missing=f"there is no job queue for GPU pool {gpu!r} yet (the core creates it "
                                        "when it starts with that pool configured).")

    async def consume(self, durable: str, stream: str, subject: str, handler: Callable[[list[T]], Awaitable[None]],
                      cls: type[T], *, batch: int = 64, ack_wait_s: float = 30.0, nak_delay_s: float = 1.0,
                      poll_s: float = 1.0) -> Consumer[T]:
        """Run a durable pull loop over ``subject`` (created if missing): see ``Consumer``."""
        config = ConsumerConfig(durable_name=durable, filter_subject=subject, ack_policy=AckPolicy.EXPLICIT,
                                deliver_policy=DeliverPolicy.ALL, ack_wait=ack_wait_s, max_deliver=-1)
        with _translated(f"create consumer {durable}"):
            await self._js.add_consumer(stream, config)
        puller = await self._bind(stream, durable, cls, missing=f"consumer {durable} vanished")
        return Consumer(self._running, puller, handler, batch=batch, nak_delay_s=nak_delay_s, poll_s=poll_s)

    async def consume_results(self, handler: Callable[[list[RunResult]], Awaitable[None]], **options: Any) \
            -> Consumer[RunResult]:
        """The core's durable consumer of every run's result (never lossy)."""
        return await self.consume(subjects.CORE_RESULTS, subjects.EVENTS, subjects.RESULTS_ALL, handler, RunResult,
                                  **options)

    async def consume_progress(self, handler: Callable[[list[RunProgress]], Awaitable[None]], **options: Any) \
            -> Consumer[RunProgress]:
        """The core's durable consumer of progress events."""
        return await self.consume(subjects.CORE_PROGRESS, subjects.EVENTS, subjects.PROGRESS_ALL, handler,
                                  RunProgress, **options)

    async def consume_replies(self, platform: Platform, handler: Callable[[list[Reply]], Awaitable[None]],
                              **options: Any) -> Consumer[Reply]:
        """A chat adapter's durable consumer of every reply for its platform."""
        return await self.consume(subjects.adapter_durable(platform.value), subjects.REPLIES,
                                  subjects.platform_replies(platform.value), handler, Reply, **options)

    async def _bind(self, stream: str, durable: str, cls: type[T], *, missing: str) -> Puller[T]:
        with _translated(f"look up consumer {durable}"):
            try:
                info = await self._js.consumer_info(stream, durable)
            except nats.js.errors.NotFoundError as exc:
                raise BusError(missing) from exc
        with _translated(f"bind to consumer {durable}"):
            sub = await self._js.pull_subscribe_bind(durable=durable, stream=stream)
        return Puller(sub, cls, ack_wait_s=info.config.ack_wait or 30.0, max_deliver=info.config.max_deliver or -1)

    async def follow_replies(self, route: str, platform: Platform = Platform.CLI) -> AsyncIterator[Reply]:
        """Every reply for one route, from the first stored one on, then live (an ordered consumer).

        The iteration ends when the bus is closed. Use ``contextlib.aclosing`` when breaking out early.
        """
        with _translated("follow replies"):
            sub = await self._js.subscribe(subjects.reply_subject(platform.value, route), ordered_consumer=True,
                                           deliver_policy=DeliverPolicy.ALL)
        self._follows.add(sub)
        try:
            while not self._closing:
                try:
                    with _translated("read replies"):
                        try:
                            msg = await sub.next_msg(timeout=FOLLOW_POLL_S)
                        except nats.errors.TimeoutError:
                            continue      # quiet: look again, and notice a close within FOLLOW_POLL_S
                except BusUnavailable:
                    if self._closing:
                        return
                    raise
                try:
                    yield decode(Reply, msg.data)
                except DecodeError as exc:
                    log.warning("skipping an unreadable reply on %s: %s", msg.subject, exc)
        finally:
            self._follows.discard(sub)
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    # ----- remote calls of runner backends ------------------------------------------------------

    async def runner_calls(self) -> JsonBucket:
        """The KV bucket where remote backends keep the call they started for each run (see core.subjects)."""
        with _translated("open the runner calls bucket"):
            try:
                kv = await self._js.key_value(subjects.RUNNER_CALLS)
            except nats.js.errors.BucketNotFoundError:       # a worker that came up before any core
                kv = await self._js.create_key_value(RUNNER_CALLS_CONFIG)
        return JsonBucket(kv)

    async def watch_pool_status(self, on_status: Callable[[PoolStatus], Awaitable[None]]) -> Running:
        """Call ``on_status`` with every worker's ``PoolStatus`` report, of every pool."""
        served = _Served(self._running)

        async def on_message(msg: Msg) -> None:
            try:
                await on_status(decode(PoolStatus, msg.data))
            except DecodeError as exc:
                log.warning("skipping an unreadable pool status on %s: %s", msg.subject, exc)
            except Exception:
                log.exception("could not handle a pool status on %s", msg.subject)

        with _translated("watch pool status reports"):
            served.sub = await self._nc.subscribe(subjects.POOL_STATUS_ALL, cb=on_message)
            await self._nc.flush()
        return served
    async def ledger(self, bucket: str, ttl_s: float) -> Ledger:
        """Open (creating when missing) the key-value bucket ``bucket``; entries expire after ``ttl_s``."""
        with _translated(f"open the ledger {bucket}"):
            try:
                kv = await self._js.create_key_value(KeyValueConfig(bucket=bucket, ttl=ttl_s, history=1,
                                                                    storage=StorageType.FILE))
            except nats.js.errors.BadRequestError:     # exists with another configuration: use it as it is
                kv = await self._js.key_value(bucket)
        return Ledger(kv)

    # ----- dead letters (used by core.deadletter) ----------------------------------------------

    async def watch_max_deliveries(self, on_advisory: Callable[[int, int], Awaitable[None]]) -> Running:
        """Call ``on_advisory(stream_seq, deliveries)`` when a job consumer gives up on a message."""
        served = _Served(self._running)

        async def on_message(msg: Msg) -> None:
            try:
                advisory = json.loads(msg.data)
                await on_advisory(int(advisory["stream_seq"]), int(advisory["deliveries"]))
            except Exception:
                log.exception("could not handle the advisory %r", msg.data[:500])

        with _translated("watch for failed jobs"):
            served.sub = await self._nc.subscribe(subjects.MAX_DELIVERIES_ADVISORY, cb=on_message)
            await self._nc.flush()
        return served

    async def stranded_jobs(self) -> list[tuple[int, int]]:
        """``(stream_seq, deliveries)`` of jobs their pool's consumer will never deliver again.

        A job that used up its deliveries stays in the work queue. When a pool has nothing in flight or
        awaiting redelivery, every job it already delivered that is still stored is such a job.
        """
        with _translated("look for failed jobs"):
            stranded = []
            for info in await self._js.consumers_info(subjects.JOBS):
                delivered = info.delivered.stream_seq if info.delivered else 0
                if info.num_ack_pending or not delivered or not info.config.filter_subject:
                    continue
                seq = 1
                while True:
                    try:
                        msg = await self._js.get_msg(subjects.JOBS, seq, subject=info.config.filter_subject,
                                                     next=True)
                    except nats.js.errors.NotFoundError:
                        break
                    if msg.seq is None or msg.seq > delivered:
                        break
                    stranded.append((msg.seq, info.config.max_deliver or 0))
                    seq = msg.seq + 1
            return stranded

    async def dead_letter_job(self, stream_seq: int, deliveries: int) -> bytes | None:
        """Copy a job to ``jobs.dead.<gpu>``; return its payload, or ``None`` when it is no longer queued."""
        with _translated(f"dead-letter job {stream_seq}"):
            try:
                msg = await self._js.get_msg(subjects.JOBS, stream_seq)
            except nats.js.errors.NotFoundError:
                return None
            data = msg.data or b""
            headers = {"x-orig-seq": str(stream_seq), "x-deliveries": str(deliveries)}
            msg_id = (msg.headers or {}).get("Nats-Msg-Id")
            if msg_id:
                headers["Nats-Msg-Id"] = msg_id
            await self._js.publish(subjects.dead_subject(msg.subject or ""), data, headers=headers)
            return data

    async def delete_job(self, stream_seq: int) -> None:
        with _translated(f"delete job {stream_seq}"), contextlib.suppress(nats.js.errors.NotFoundError):
            await self._js.delete_msg(subjects.JOBS, stream_seq)

    # ----- shutdown -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop everything this bus runs, flush what is published, and disconnect."""
        self._closing = True
        for running in list(self._running):
            await running.stop()
        for sub in list(self._follows):
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()
        if self._nc.is_closed:
            return
        try:
            await self._nc.drain()
        except (TimeoutError, nats.errors.Error) as exc:
            log.warning("NATS drain did not finish (%s); closing", exc)
            await self._nc.close()


async def _answer_safely(handler: Callable[[Command], Awaitable[Reply]], command: Command) -> Reply:
    try:
        return await handler(command)
    except Exception:
        log.exception("command %s (%s) failed", command.id, command.kind.value)
        return error_reply(command.reply_to, "Something went wrong inside kernelrank; try again in a minute.",
                           command.id)
