"""Replies and errors as HTTP responses, and a submission's progress as server-sent events."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Protocol

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.responses import JSONResponse

from core.contracts.messages import Command, Platform, Reply, Tone, still_coming, to_jsonable

# The core's error codes (core.contracts.errors) and the API's own, as statuses; an error reply without a code is
# internal.
STATUS = {
    "invalid": 400,
    "unauthenticated": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "too_large": 413,
    "unsupported": 415,
    "rate_limited": 429,
    "internal": 500,
    "unavailable": 503,
}
PING_S = 15  # a comment line this often keeps proxies from closing a quiet stream


class Core(Protocol):
    """What the API needs of the bus: ``core.contracts.bus.Bus`` is one."""

    async def request(self, command: Command, timeout_s: float = ...) -> Reply: ...

    def follow_replies(self, route: str, platform: Platform = ...) -> AsyncGenerator[Reply, None]: ...


def error(code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """One sentence for the person, under a code a program can act on."""
    if code == "unauthenticated":
        headers = {**(headers or {}), "WWW-Authenticate": 'Bearer realm="kernelrank"'}
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=STATUS.get(code, 400), headers=headers
    )


def answer(reply: Reply, status: int = 200) -> JSONResponse:
    """The core's reply as the response: the reply itself, or an error with the status its code implies."""
    if reply.tone is Tone.ERROR:
        code = str(reply.data.get("error") or "internal")
        retry = reply.data.get("retry_after_s")
        return error(code, sentence(reply), {"Retry-After": str(retry)} if retry else None)
    return JSONResponse(to_jsonable(reply), status_code=status)


def stream(accepted: Reply, route: str, core: Core) -> EventSourceResponse:
    """The first answer, then every reply it says is still coming (``still_coming``: a submission's progress and
    reports, or an ``admin create``'s outcome), then ``end``."""
    return EventSourceResponse(_events(accepted, route, core), ping=PING_S)


async def _events(accepted: Reply, route: str, core: Core) -> AsyncIterator[ServerSentEvent]:
    yield _event(accepted)
    async for reply in run_replies(core, route, still_coming(accepted)):
        yield _event(reply)
    yield ServerSentEvent(event="end", data="{}")


async def run_replies(
    core: Core, route: str, awaited: set[str], platform: Platform = Platform.CLI
) -> AsyncIterator[Reply]:
    """Every reply on the route to the requests in ``awaited`` (a submission's runs, an ``admin create``), until each
    has its final one."""
    waiting = set(awaited)
    if not waiting:
        return
    replies = core.follow_replies(route, platform)
    async with contextlib.aclosing(replies):
        async for reply in replies:
            if reply.in_reply_to not in waiting:
                continue
            yield reply
            if reply.final:
                waiting.discard(reply.in_reply_to)
            if not waiting:
                break


def _event(reply: Reply) -> ServerSentEvent:
    return ServerSentEvent(event="reply", data=json.dumps(to_jsonable(reply), separators=(",", ":")))


def sentence(reply: Reply) -> str:
    return " ".join(part.text for part in reply.parts if part.text).strip() or "kernelrank refused the request."
