"""Commands by request-reply: the client's side (``request``, which rides out a NATS restart) and the core's."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg

from core.contracts import answer_by, subjects
from core.contracts.bus._consumers import Running, Served
from core.contracts.bus._errors import (
    CONNECTION_LOST,
    NOT_RUNNING,
    RECONNECTING,
    BusError,
    CoreUnavailable,
    PayloadTooLarge,
    Reconnecting,
    translated,
)
from core.contracts.bus._fit import TooLarge, fitted
from core.contracts.bus._link import NO_RESPONDERS_RETRY_S, Link, backoff
from core.contracts.messages import Command, DecodeError, Platform, Reply, ReplyTo, decode, encode
from core.contracts.reply_parts import error_reply
from core.contracts.roles import API_PLATFORMS

log = logging.getLogger(__name__)


class _Dropped(Exception):
    """The connection dropped while a request waited: its answer may never come."""


class CommandOps:
    """Mixed into ``Bus``: needs its ``_nc``, ``_link``, ``_running`` and ``max_payload``."""

    _nc: Client
    _link: Link
    _running: set[Running]
    max_payload: Any

    # ----- commands: request-reply --------------------------------------------------------------

    async def request(self, command: Command, timeout_s: float = 5.0) -> Reply:
        """Ask the core and return its answer, trying again (same command id) while NATS comes back.

        A request that the connection dropped is sent again once it is back, and "no responders" just after
        a (re)connect is asked again for up to ``NO_RESPONDERS_RETRY_S`` (the core resubscribes a moment
        after us); all within ``timeout_s``. Sending a command twice is safe: a submission is stored once
        per command id, and queries only read. Raises ``CoreUnavailable`` (no core, or no answer in time),
        ``Reconnecting`` (NATS did not come back in time) or ``PayloadTooLarge``. The command tells the core how
        long we wait (``answer_within_s``, ``timeout_s`` unless set), so that the core drops a query we gave up on.
        """
        if command.answer_within_s <= 0:
            command = dataclasses.replace(command, answer_within_s=timeout_s)
        payload, subject = encode(command), subjects.command_subject(command.actor.platform.value)
        if len(payload) > self.max_payload:
            raise PayloadTooLarge(
                f"This request is {size_words(len(payload))}, more than the "
                f"{size_words(self.max_payload)} kernelrank's message bus carries: make the file "
                "(or the arguments) smaller."
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        no_responders = 0
        while True:
            remaining = deadline - loop.time()
            if not await self._link.wait_up(remaining):
                raise Reconnecting(RECONNECTING)
            try:
                msg = await self._request_once(subject, payload, deadline - loop.time())
            except (_Dropped, *CONNECTION_LOST):
                if loop.time() >= deadline:
                    raise Reconnecting(RECONNECTING) from None
                await asyncio.sleep(backoff(0))  # nats-py may not have marked the connection down yet
                continue
            except nats.errors.NoRespondersError as exc:
                retry_for = min(NO_RESPONDERS_RETRY_S, deadline - loop.time())
                wait = backoff(no_responders)
                if not self._link.fresh() or sum(backoff(i) for i in range(no_responders + 1)) > retry_for:
                    raise CoreUnavailable(NOT_RUNNING) from exc
                no_responders += 1
                await asyncio.sleep(wait)
                continue
            except nats.errors.TimeoutError as exc:
                raise CoreUnavailable(
                    f"kernelrank did not answer within {timeout_s:g} s; it may be busy or "
                    "restarting. Try again in a minute."
                ) from exc
            except nats.errors.Error as exc:
                raise BusError(f"cannot send the command: {exc}") from exc
            break
        try:
            return decode(Reply, msg.data)
        except DecodeError as exc:
            log.error("unreadable reply to command %s: %s", command.id, exc)
            raise BusError("kernelrank answered in a format this client cannot read; update the client.") from exc

    async def _request_once(self, subject: str, payload: bytes, timeout_s: float) -> Msg:
        """One request; ``_Dropped`` as soon as the connection is lost while it waits."""
        dropped = self._link.dropped
        asked = asyncio.ensure_future(self._nc.request(subject, payload, timeout=max(0.001, timeout_s)))
        lost = asyncio.ensure_future(dropped.wait())
        try:
            await asyncio.wait({asked, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
        if not asked.done():
            asked.cancel()
            with contextlib.suppress(asyncio.CancelledError, nats.errors.Error):
                await asked
            raise _Dropped
        return asked.result()

    async def serve_commands(
        self, handler: Callable[[Command], Awaitable[Reply]], *, max_in_flight: int = 256
    ) -> Running:
        """Answer commands (queue group ``core``) with up to ``max_in_flight`` handlers running at once.

        An unreadable request, a command whose user or reply route is not of the platform whose subject
        it came on (only that platform's adapter may publish there), or a handler that raises gets an
        error ``Reply``; the server never stops. A query whose asker has stopped waiting (``answer_by``) is
        dropped unanswered, before its handler starts or as soon as its handler's next read would begin. Every
        reply is fitted under the bus's payload limit (``_fit``): a reply NATS cannot carry would never arrive.
        """
        served = Served(self._running)
        slots = asyncio.Semaphore(max_in_flight)

        async def answer(msg: Msg, received: float) -> None:
            try:
                try:
                    command = decode(Command, msg.data)
                except DecodeError as exc:
                    log.warning("unreadable command: %s", exc)
                    reply: Reply | None = error_reply(
                        ReplyTo(platform=Platform.CLI),
                        "kernelrank could not read that request "
                        "(is this client older or newer than the server?); update it and try again.",
                    )
                else:
                    reply = _misrouted(command, msg.subject) or await _answer_in_time(
                        handler, command, answer_by.deadline(command, received)
                    )
                if msg.reply and reply is not None:
                    await msg.respond(self._fitted_reply(reply))
            except Exception:
                log.exception("could not answer a command")
            finally:
                slots.release()

        async def on_message(msg: Msg) -> None:
            received = time.monotonic()
            await slots.acquire()
            task = asyncio.create_task(answer(msg, received))
            served.tasks.add(task)
            task.add_done_callback(served.tasks.discard)

        with translated("serve commands"):
            # one subscription per platform, not svc.command.*: measured on nats-server 2.15, a request sent just
            # after a wildcard queue subscription was flushed sometimes (2 in 40) found no responder
            served.sub, *served.more = [
                await self._nc.subscribe(
                    subjects.command_subject(platform.value), queue=subjects.CORE_QUEUE, cb=on_message
                )
                for platform in Platform
            ]
            await self._nc.flush()  # the server knows the subscriptions before we report ready
        return served

    def _fitted_reply(self, reply: Reply) -> bytes:
        """``reply``'s wire form, cut to fit the payload limit, or a sentence saying that it could not be."""
        try:
            return fitted(reply, self.max_payload)
        except TooLarge:
            log.error("the reply to command %s does not fit the bus even cut down", reply.in_reply_to)
            return encode(
                error_reply(
                    reply.reply_to,
                    "The answer is too large to send; ask for less (a smaller limit, one GPU or one leaderboard).",
                    reply.in_reply_to,
                )
            )


def _misrouted(command: Command, subject: str) -> Reply | None:
    """An error reply when a command names a user or a reply route of another platform than its subject's.

    Only a platform's own adapter may publish on its command subject (``core.contracts.roles``), so the subject says
    who vouches for the user; a command claiming another platform's user, or carrying a token's hash (which
    only the API process may send) on a chat subject, is refused, never answered.
    """
    platform = subjects.command_platform(subject)
    token_ok = not command.credential_sha256 or platform in {p.value for p in API_PLATFORMS}
    if command.actor.platform.value == platform and command.reply_to.platform.value == platform and token_ok:
        return None
    log.warning(
        "refused command %s on %s: it names a %s user and a %s reply route%s",
        command.id,
        subject,
        command.actor.platform.value,
        command.reply_to.platform.value,
        "" if token_ok else ", and carries a token's hash",
    )
    return error_reply(
        command.reply_to,
        f"kernelrank refuses this request: it came through the {platform} "
        f"side but speaks for a {command.actor.platform.value} user"
        f"{'' if token_ok else ' or a token holder'}.",
        command.id,
    )


async def _answer_in_time(
    handler: Callable[[Command], Awaitable[Reply]], command: Command, due: float | None
) -> Reply | None:
    """The handler's reply, or None where the asker stopped waiting before the work was done (``answer_by``)."""
    token = answer_by.ANSWER_BY.set(due)
    try:
        answer_by.check(due)
        return await handler(command)
    except answer_by.Abandoned:
        log.info(
            "dropped command %s (%s): its asker stopped waiting before it was worked on", command.id, command.kind.value
        )
        return None
    except Exception:
        log.exception("command %s (%s) failed", command.id, command.kind.value)
        return error_reply(
            command.reply_to, "Something went wrong inside kernelrank; try again in a minute.", command.id
        )
    finally:
        answer_by.ANSWER_BY.reset(token)


def size_words(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB" if n >= 1 << 20 else f"{n / 1024:.0f} KB"
