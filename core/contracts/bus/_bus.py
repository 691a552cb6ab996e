"""The ``Bus``: a NATS connection with kernelrank's operations on it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from core.contracts import subjects
from core.contracts.bus._commands import CommandOps, size_words
from core.contracts.bus._consumers import Check, Consumer, Puller, Running
from core.contracts.bus._dead_letters import DeadLetterOps
from core.contracts.bus._errors import BusError, BusUnavailable, PayloadTooLarge, translated
from core.contracts.bus._fit import TooLarge, fit, fitted
from core.contracts.bus._follow import follow
from core.contracts.bus._kv import BucketOps
from core.contracts.bus._link import Link, while_reconnecting
from core.contracts.bus._pools import PoolStatusOps
from core.contracts.bus._streams import StreamOps, names_publisher
from core.contracts.bus._work import WorkOps
from core.contracts.messages import (
    DecodeError,
    Platform,
    Reply,
    RunJob,
    RunProgress,
    RunResult,
    decode,
    encode,
)
from core.contracts.roles import Role
from core.contracts.signing import report_key, sign

if TYPE_CHECKING:
    from core.contracts.config import Settings
    from core.contracts.credentials import BusCredentials

log = logging.getLogger(__name__)

T = TypeVar("T")

RECONNECT_WAIT_S = 0.5
FOLLOW_POLL_S = 0.5  # a reply follower notices Bus.close() within this long
PAYLOAD_MARGIN_BYTES = 16 * 1024  # room left under max_payload for headers and what a fitted message gains back
PUBLISH_ATTEMPT_S = 2.0  # how long one publish waits for the stream's acknowledgement


class Bus(CommandOps, StreamOps, DeadLetterOps, BucketOps, PoolStatusOps, WorkOps):
    """A connection to NATS with kernelrank's operations on it. Create with ``await Bus.connect(url, name)``."""

    def __init__(
        self, nc: Client, link: Link, *, manages: bool = True, credentials: BusCredentials | None = None
    ) -> None:
        self._nc = nc
        self._manages = manages  # may create streams and buckets (the core, or anyone on an open server)
        self.worker_name = credentials.worker_name if credentials and credentials.role is Role.WORKER else ""
        self._worker_key = credentials.key if credentials else ""  # signs this worker's reports with the run keys
        # whether the server knows who this is (then every worker has a key of its own, ``core.contracts.signing``)
        self.authenticated = bool(credentials and credentials.authenticated)
        self._js = nc.jetstream()
        self._link = link
        self._replicas = 1  # copies of each stream and bucket this bus creates; the core's setting (ensure_streams)
        self._running: set[Running] = set()
        self._closing = False

    @classmethod
    async def connect(cls, url: str, name: str, credentials: BusCredentials | None = None) -> Bus:
        """Connect, failing fast when no server answers; once connected, reconnect for as long as it takes.

        ``url`` may list a cluster's servers, comma-separated (``KERNELRANK_NATS_URL``): the first that answers is
        used, one that does not is named in the log, and a lost connection moves to another (nats-py also learns
        the cluster's other servers from the one it reached).

        ``credentials`` (``core.contracts.credentials.for_role``) log in as a role; without them the connection
        is anonymous, which only an open server (the tests' own) accepts.
        """
        refused: list[Exception] = []  # the server said no to the credentials (it reports it here)
        link = Link()

        async def on_error(exc: Exception) -> None:
            if "authorization violation" in str(exc).lower():
                refused.append(exc)
            if "permissions violation" in str(exc).lower():  # a bug in core.contracts.roles, or someone probing
                log.warning("NATS refused %s: %s", name, exc)
            else:
                log.debug("NATS %s: %s", name, exc)

        async def on_disconnect() -> None:
            link.lost()
            if not (nc.is_closed or nc.is_draining):  # a close we asked for is no news
                log.warning("%s lost its NATS connection; reconnecting", name)

        async def on_reconnect() -> None:
            link.back()
            log.info("%s reconnected to NATS", name)

        nc = Client()
        options = credentials.connect_options() if credentials else {}
        servers = server_urls(url)
        try:
            await nc.connect(
                servers,
                name=name,
                dont_randomize=True,  # the operator's order: the nearest server first
                connect_timeout=2,
                max_reconnect_attempts=1,
                reconnect_time_wait=RECONNECT_WAIT_S,  # type: ignore[arg-type]  # nats-py says int; it sleeps a float
                drain_timeout=5,
                error_cb=on_error,
                disconnected_cb=on_disconnect,
                reconnected_cb=on_reconnect,
                **options,
            )
        except (TimeoutError, OSError, nats.errors.Error) as exc:
            if refused or "authorization violation" in str(exc).lower():
                who = (
                    f"the {credentials.role.value} role's credentials"
                    if credentials
                    else "a connection without credentials"
                )
                raise BusUnavailable(
                    f"NATS at {url} refused {who}: start the system with `kernelrank up`, or give "
                    "this process its role's credentials (KERNELRANK_NATS_CREDENTIALS, see "
                    "docs/security.md)."
                ) from exc
            raise BusUnavailable(
                f"cannot reach NATS at {url}: is kernelrank running? Start it with "
                "`kernelrank up`, or set KERNELRANK_NATS_URL to a running NATS."
            ) from exc
        nc.options["max_reconnect_attempts"] = -1  # the first attempt fails fast; later ones never give up
        if len(servers) > 1 and nc.connected_url is not None and nc.connected_url.netloc not in servers[0]:
            log.warning(
                "%s: NATS at %s did not answer; connected to %s instead", name, servers[0], nc.connected_url.netloc
            )
        return cls(nc, link, manages=credentials is None or credentials.may_manage, credentials=credentials)

    @classmethod
    async def connect_as(cls, url: str, name: str, settings: Settings, role: Role) -> Bus:
        """Connect as ``role`` with the credentials this process's settings give it (``core.contracts.credentials``)."""
        from core.contracts.credentials import for_role

        return await cls.connect(url, name, for_role(settings, role))

    @property
    def max_payload(self) -> int:
        """The largest message the server takes, less room for headers: what a message must fit in."""
        return self._nc.max_payload - PAYLOAD_MARGIN_BYTES

    # ----- publishing ---------------------------------------------------------------------------

    async def publish_job(self, job: RunJob) -> bool:
        """Queue a job for its GPU pool, once stored for certain; ``False`` when a job with this run id was queued
        in the last 2 minutes. ``QueueFull``, ``PayloadTooLarge``, or ``BusUnavailable`` after
        ``PUBLISH_CONFIRM_S`` of trying (then the job may or may not be queued)."""
        ack = await self._publish_confirmed(subjects.job_subject(job.gpu), encode(job), job.run_id)
        return not ack.duplicate

    async def publish_progress(self, progress: RunProgress, key: str = "", *, confirm: bool = False) -> None:
        """A worker's progress event on its worker's subject, signed with its job's ``result_key`` bound to this
        worker's key (the core drops it unsigned).

        It is stored by the stream, but only waited for with ``confirm`` (a worker's "started", which marks
        the run running and pairs it with this worker): one lost update is replaced by the next.
        """
        subject = subjects.progress_subject(progress.worker, progress.run_id)
        payload = encode(sign(progress, report_key(key, self._worker_key)) if key else progress)
        with translated(f"publish on {subject}"):
            if confirm:
                await self._js.publish(subject, payload)
            else:
                await self._nc.publish(subject, payload)

    async def publish_result(self, result: RunResult, key: str = "") -> None:
        """Store a run's result on its worker's subject, signed with its job's ``result_key`` bound to this worker's
        key (the core drops it unsigned), retried while
        NATS comes back. Cut it to size with ``fit`` first, so the signature covers what is sent: one too big
        for NATS raises ``PayloadTooLarge`` here, and would on every attempt.

        The message id holds the signature, not just the run id: a result republished as it was is still
        stored once, but a forged one cannot take the run's id and make the stream drop the real one.
        """
        signed = sign(result, report_key(key, self._worker_key)) if key else result
        await self._publish_confirmed(
            subjects.result_subject(result.worker, result.run_id),
            encode(signed),
            f"{result.run_id}:{signed.signature[:32] or 'unsigned'}",
        )

    async def publish_reply(self, reply: Reply) -> None:
        """Store a reply on its platform's durable subject; the reply id makes a repeat a no-op.

        Progress updates (``final`` False) go out without waiting for the stream's acknowledgement: the
        stream still stores them, and one lost update is replaced by the next, so the round trip is not
        worth its cost on the core's busiest path.
        """
        subject = subjects.reply_subject(reply.reply_to.platform.value, reply.reply_to.channel)
        if reply.final:
            await self._publish_confirmed(subject, self._fitted(reply), reply.id)
        else:
            with translated(f"publish on {subject}"):
                await self._nc.publish(subject, self._fitted(reply))

    def fit(self, message: T) -> T:
        """``message``, or a copy with its longest texts cut so that it fits what NATS carries (``_fit``);
        ``PayloadTooLarge`` when even that cannot make it fit."""
        try:
            return fit(message, self.max_payload)
        except TooLarge as exc:
            raise PayloadTooLarge(str(exc)) from exc

    def _fitted(self, message: Reply) -> bytes:
        try:
            return fitted(message, self.max_payload)
        except TooLarge as exc:
            raise PayloadTooLarge(str(exc)) from exc

    async def _publish_confirmed(self, subject: str, payload: bytes, msg_id: str) -> Any:
        """Publish to a stream until it acknowledges, for up to ``PUBLISH_CONFIRM_S`` while NATS is unreachable
        (each attempt waits ``PUBLISH_ATTEMPT_S`` for the acknowledgement).

        The message id makes a repeat harmless: a publish whose acknowledgement was lost comes back as a
        duplicate, which still means stored.
        """
        if len(payload) > self.max_payload:
            raise PayloadTooLarge(
                f"cannot publish on {subject}: {size_words(len(payload))} is more than the "
                f"{size_words(self.max_payload)} NATS carries."
            )
        return await while_reconnecting(
            f"publish on {subject}",
            lambda: self._js.publish(subject, payload, headers={"Nats-Msg-Id": msg_id}, timeout=PUBLISH_ATTEMPT_S),
        )

    # ----- consuming ----------------------------------------------------------------------------

    async def consume(
        self,
        durable: str,
        stream: str,
        subject: str,
        handler: Callable[[list[T]], Awaitable[None]],
        cls: type[T],
        *,
        batch: int = 64,
        ack_wait_s: float = 30.0,
        nak_delay_s: float = 1.0,
        poll_s: float = 1.0,
        ack_sync: bool = True,
        check: Check | None = None,
    ) -> Consumer[T]:
        """Run a durable pull loop over ``subject`` (created if missing): see ``Consumer``; a message ``check``
        refuses is dropped (``Puller``)."""
        # ``name`` makes nats-py ask through the create subject that names the filter (see core.contracts.roles)
        config = ConsumerConfig(
            name=durable,
            durable_name=durable,
            filter_subject=subject,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=ack_wait_s,
            max_deliver=-1,
        )
        with translated(f"create consumer {durable}"):
            await self._js.add_consumer(stream, config)
        puller = await self._bind(stream, durable, cls, missing=f"consumer {durable} vanished", check=check)
        return Consumer(
            self._running, puller, handler, batch=batch, nak_delay_s=nak_delay_s, poll_s=poll_s, ack_sync=ack_sync
        )

    async def consume_results(
        self, handler: Callable[[list[RunResult]], Awaitable[None]], **options: Any
    ) -> Consumer[RunResult]:
        """The core's durable consumer of every run's result (never lossy); each names the worker that sent it."""
        return await self.consume(
            subjects.CORE_RESULTS,
            subjects.EVENTS,
            subjects.RESULTS_ALL,
            handler,
            RunResult,
            check=names_publisher,
            **options,
        )

    async def consume_progress(
        self, handler: Callable[[list[RunProgress]], Awaitable[None]], **options: Any
    ) -> Consumer[RunProgress]:
        """The core's durable consumer of progress events; each names the worker that sent it."""
        return await self.consume(
            subjects.CORE_PROGRESS,
            subjects.EVENTS,
            subjects.PROGRESS_ALL,
            handler,
            RunProgress,
            check=names_publisher,
            **options,
        )

    async def consume_replies(
        self, platform: Platform, handler: Callable[[list[Reply]], Awaitable[None]], **options: Any
    ) -> Consumer[Reply]:
        """A chat adapter's durable consumer of every reply for its platform."""
        return await self.consume(
            subjects.adapter_durable(platform.value),
            subjects.REPLIES,
            subjects.platform_replies(platform.value),
            handler,
            Reply,
            **options,
        )

    async def _bind(
        self, stream: str, durable: str, cls: type[T], *, missing: str, check: Check | None = None
    ) -> Puller[T]:
        with translated(f"look up consumer {durable}"):
            try:
                info = await self._js.consumer_info(stream, durable)
            except nats.js.errors.NotFoundError as exc:
                raise BusError(missing) from exc
        with translated(f"bind to consumer {durable}"):
            sub = await self._js.pull_subscribe_bind(durable=durable, stream=stream)
        return Puller(
            sub, cls, ack_wait_s=info.config.ack_wait or 30.0, max_deliver=info.config.max_deliver or -1, check=check
        )

    async def follow_replies(self, route: str, platform: Platform = Platform.CLI) -> AsyncGenerator[Reply, None]:
        """Every reply for one route, from the first stored one on, then live (see ``_follow``).

        The iteration ends when the bus is closed. Use ``contextlib.aclosing`` when breaking out early.
        """
        messages = follow(
            self._nc,
            self._js,
            subjects.REPLIES,
            subjects.reply_subject(platform.value, route),
            poll_s=FOLLOW_POLL_S,
            closing=lambda: self._closing,
        )
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

    # ----- shutdown -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop everything this bus runs, flush what is published, and disconnect."""
        self._closing = True
        outcomes = await asyncio.gather(*(running.stop() for running in list(self._running)), return_exceptions=True)
        for outcome in outcomes:  # all stopped first, then the first failure raised
            if isinstance(outcome, BaseException):
                raise outcome
        if self._nc.is_closed:
            return
        try:
            await self._nc.drain()
        except (TimeoutError, nats.errors.Error) as exc:
            log.warning("NATS drain did not finish (%s); closing", exc)
            await self._nc.close()


def server_urls(url: str) -> list[str]:
    """The servers of ``KERNELRANK_NATS_URL``: one URL, or a cluster's, comma-separated, in the order to try them."""
    return [part.strip() for part in url.split(",") if part.strip()]
