"""The ``Bus``: a NATS connection with kernelrank's operations on it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from core import subjects
from core.bus._consumers import Consumer, Puller, Running, Served
from core.bus._dead_letters import DeadLetterOps
from core.bus._errors import NOT_RUNNING, BusError, BusUnavailable, CoreUnavailable, translated
from core.bus._follow import follow
from core.bus._kv import BucketOps
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
from core.roles import API_PLATFORMS
from core.signing import sign

if TYPE_CHECKING:
    from core.config import Settings
    from core.credentials import BusCredentials
    from core.roles import Role

log = logging.getLogger(__name__)

T = TypeVar("T")

DAY_S = 24 * 3600
DUPLICATE_WINDOW_S = 120       # Nats-Msg-Id dedupe on every stream
RECONNECT_WAIT_S = 0.5
FOLLOW_POLL_S = 0.5            # a reply follower notices Bus.close() within this long

class Bus(DeadLetterOps, BucketOps):
    """A connection to NATS with kernelrank's operations on it. Create with ``await Bus.connect(url, name)``."""

    def __init__(self, nc: Client, *, manages: bool = True) -> None:
        self._nc = nc
        self._manages = manages        # may create streams and buckets (the core, or anyone on an open server)
        self._js = nc.jetstream()
        self._running: set[Running] = set()
        self._closing = False

    @classmethod
    async def connect(cls, url: str, name: str, credentials: BusCredentials | None = None) -> Bus:
        """Connect, failing fast when no server answers; once connected, reconnect for as long as it takes.

        ``credentials`` (``core.credentials.for_role``) log in as a role; without them the connection
        is anonymous, which only an open server (the tests' own) accepts.
        """
        refused: list[Exception] = []        # the server said no to the credentials (it reports it here)

        async def on_error(exc: Exception) -> None:
            if "authorization violation" in str(exc).lower():
                refused.append(exc)
            if "permissions violation" in str(exc).lower():     # a bug in core.roles, or someone probing
                log.warning("NATS refused %s: %s", name, exc)
            else:
                log.debug("NATS %s: %s", name, exc)

        async def on_disconnect() -> None:
            if not (nc.is_closed or nc.is_draining):      # a close we asked for is no news
                log.warning("%s lost its NATS connection; reconnecting", name)

        async def on_reconnect() -> None:
            log.info("%s reconnected to NATS", name)

        nc = Client()
        options = credentials.connect_options() if credentials else {}
        try:
            await nc.connect(url, name=name, connect_timeout=2, max_reconnect_attempts=1,
                             reconnect_time_wait=RECONNECT_WAIT_S, drain_timeout=5, error_cb=on_error,
                             disconnected_cb=on_disconnect, reconnected_cb=on_reconnect, **options)
        except (TimeoutError, OSError, nats.errors.Error) as exc:
            if refused or "authorization violation" in str(exc).lower():
                who = f"the {credentials.role.value} role's credentials" if credentials else "a connection without " \
                      "credentials"
                raise BusUnavailable(f"NATS at {url} refused {who}: start the system with `kernelrank up`, or give "
                                     "this process its role's credentials (KERNELRANK_NATS_CREDENTIALS, see "
                                     "docs/security.md).") from exc
            raise BusUnavailable(f"cannot reach NATS at {url}: is kernelrank running? Start it with "
                                 "`kernelrank up`, or set KERNELRANK_NATS_URL to a running NATS.") from exc
        nc.options["max_reconnect_attempts"] = -1   # the first attempt fails fast; later ones never give up
        return cls(nc, manages=credentials is None or credentials.may_manage)

    @classmethod
    async def connect_as(cls, url: str, name: str, settings: Settings, role: Role) -> Bus:
        """Connect as ``role`` with the credentials this process's settings give it (``core.credentials``)."""
        from core.credentials import for_role

        return await cls.connect(url, name, for_role(settings, role))

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
            with translated(f"create stream {config.name}"):
                try:
                    await self._js.add_stream(config)
                except nats.js.errors.BadRequestError:   # exists with another configuration: bring it up to date
                    await self._js.update_stream(config)
        for gpu in gpus:
            config = ConsumerConfig(durable_name=subjects.runner_durable(gpu), filter_subject=subjects.job_subject(gpu),
                                    ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
                                    ack_wait=ack_wait_s, max_deliver=max_deliver,
                                    max_ack_pending=(concurrency or {}).get(gpu))
            with translated(f"create the job queue for {gpu}"):
                await self._js.add_consumer(subjects.JOBS, config)   # a durable create also updates
        await self._ensure_buckets()

    # ----- commands: request-reply --------------------------------------------------------------

    async def request(self, command: Command, timeout_s: float = 5.0) -> Reply:
        """Ask the core; ``CoreUnavailable`` at once when no core is subscribed, or after ``timeout_s``."""
        with translated("send the command"):
            try:
                msg = await self._nc.request(subjects.command_subject(command.actor.platform.value),
                                             encode(command), timeout=timeout_s)
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

        An unreadable request, a command whose user or reply route is not of the platform whose subject
        it came on (only that platform's adapter may publish there), or a handler that raises gets an
        error ``Reply``; the server never stops.
        """
        served = Served(self._running)
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
                    reply = _misrouted(command, msg.subject) or await _answer_safely(handler, command)
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

        with translated("serve commands"):
            # one subscription per platform, not svc.command.*: measured on nats-server 2.15, a request sent just
            # after a wildcard queue subscription was flushed sometimes (2 in 40) found no responder
            served.sub, *served.more = [await self._nc.subscribe(subjects.command_subject(platform.value),
                                                                 queue=subjects.CORE_QUEUE, cb=on_message)
                                        for platform in Platform]
            await self._nc.flush()       # the server knows the subscriptions before we report ready
        return served

    # ----- publishing ---------------------------------------------------------------------------

    async def publish_job(self, job: RunJob) -> bool:
        """Queue a job for its GPU pool; ``False`` when a job with this run id was queued in the last 2 min."""
        ack = await self._publish(subjects.job_subject(job.gpu), job, msg_id=job.run_id)
        return not ack.duplicate

    async def publish_progress(self, progress: RunProgress, key: str = "") -> None:
        """A worker's progress event, signed with its job's ``result_key`` (the core drops it unsigned)."""
        await self._publish(subjects.progress_subject(progress.run_id), sign(progress, key) if key else progress)

    async def publish_result(self, result: RunResult, key: str = "") -> None:
        """A worker's result, signed with its job's ``result_key`` (the core drops it unsigned).

        The message id holds the signature, not just the run id: a result republished as it was is still
        stored once, but a forged one cannot take the run's id and make the stream drop the real one.
        """
        signed = sign(result, key) if key else result
        await self._publish(subjects.result_subject(result.run_id), signed,
                            msg_id=f"{result.run_id}:{signed.signature[:32] or 'unsigned'}")

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
            with translated(f"publish on {subject}"):
                await self._nc.publish(subject, encode(reply))

    async def publish_pool_status(self, status: PoolStatus) -> None:
        """A worker's periodic report; plain NATS (no stream): only the latest one matters."""
        subject = subjects.pool_status_subject(status.gpu)
        with translated(f"publish on {subject}"):
            await self._nc.publish(subject, encode(status))

    async def _publish(self, subject: str, message: Any, msg_id: str = "") -> Any:
        with translated(f"publish on {subject}"):
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
        # ``name`` makes nats-py ask through the create subject that names the filter (see core.roles)
        config = ConsumerConfig(name=durable, durable_name=durable, filter_subject=subject,
                                ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL, ack_wait=ack_wait_s,
                                max_deliver=-1)
        with translated(f"create consumer {durable}"):
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
        with translated(f"look up consumer {durable}"):
            try:
                info = await self._js.consumer_info(stream, durable)
            except nats.js.errors.NotFoundError as exc:
                raise BusError(missing) from exc
        with translated(f"bind to consumer {durable}"):
            sub = await self._js.pull_subscribe_bind(durable=durable, stream=stream)
        return Puller(sub, cls, ack_wait_s=info.config.ack_wait or 30.0, max_deliver=info.config.max_deliver or -1)

    async def follow_replies(self, route: str, platform: Platform = Platform.CLI) -> AsyncIterator[Reply]:
        """Every reply for one route, from the first stored one on, then live (see ``_follow``).

        The iteration ends when the bus is closed. Use ``contextlib.aclosing`` when breaking out early.
        """
        messages = follow(self._nc, self._js, subjects.REPLIES, subjects.reply_subject(platform.value, route),
                          poll_s=FOLLOW_POLL_S, closing=lambda: self._closing)
        async with contextlib.aclosing(messages):
            try:
                async for msg in messages:
                    try:
                        yield decode(Reply, msg.data)
                    except DecodeError as exc:
                        log.warning("skipping an unreadable reply on %s: %s", msg.subject, exc)
            except BusUnavailable:
                if self._closing:
                    return
                raise

    async def watch_pool_status(self, on_status: Callable[[PoolStatus], Awaitable[None]]) -> Running:
        """Call ``on_status`` with every worker's ``PoolStatus`` report, of every pool."""
        served = Served(self._running)

        async def on_message(msg: Msg) -> None:
            try:
                await on_status(decode(PoolStatus, msg.data))
            except DecodeError as exc:
                log.warning("skipping an unreadable pool status on %s: %s", msg.subject, exc)
            except Exception:
                log.exception("could not handle a pool status on %s", msg.subject)

        with translated("watch pool status reports"):
            served.sub = await self._nc.subscribe(subjects.POOL_STATUS_ALL, cb=on_message)
            await self._nc.flush()
        return served
    # ----- dead letters (used by core.deadletter) ----------------------------------------------

    # ----- shutdown -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop everything this bus runs, flush what is published, and disconnect."""
        self._closing = True
        for running in list(self._running):
            await running.stop()
        if self._nc.is_closed:
            return
        try:
            await self._nc.drain()
        except (TimeoutError, nats.errors.Error) as exc:
            log.warning("NATS drain did not finish (%s); closing", exc)
            await self._nc.close()


def _misrouted(command: Command, subject: str) -> Reply | None:
    """An error reply when a command names a user or a reply route of another platform than its subject's.

    Only a platform's own adapter may publish on its command subject (``core.roles``), so the subject says
    who vouches for the user; a command claiming another platform's user, or carrying a token's hash (which
    only the API process may send) on a chat subject, is refused, never answered.
    """
    platform = subjects.command_platform(subject)
    token_ok = not command.credential_sha256 or platform in {p.value for p in API_PLATFORMS}
    if command.actor.platform.value == platform and command.reply_to.platform.value == platform and token_ok:
        return None
    log.warning("refused command %s on %s: it names a %s user and a %s reply route%s", command.id, subject,
                command.actor.platform.value, command.reply_to.platform.value,
                "" if token_ok else ", and carries a token's hash")
    return error_reply(command.reply_to, f"kernelrank refuses this request: it came through the {platform} "
                       f"side but speaks for a {command.actor.platform.value} user"
                       f"{'' if token_ok else ' or a token holder'}.", command.id)


async def _answer_safely(handler: Callable[[Command], Awaitable[Reply]], command: Command) -> Reply:
    try:
        return await handler(command)
    except Exception:
        log.exception("command %s (%s) failed", command.id, command.kind.value)
        return error_reply(command.reply_to, "Something went wrong inside kernelrank; try again in a minute.",
                           command.id)
