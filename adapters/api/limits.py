"""Request sizes, enforced before a body is read: a declared length over the limit is refused at once, and a body
sent without one (chunked) is cut off as soon as it passes the limit."""

from __future__ import annotations

from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters.api.answers import error

MARGIN_BYTES = 64 * 1024  # form fields, multipart boundaries and headers of the parts around the file
SMALL_BODY_BYTES = 64 * 1024  # requests that carry no file


class TooLarge(HTTPException):
    def __init__(self, message: str) -> None:
        super().__init__(status_code=413, detail=message)


def submission_limit(max_source_bytes: int, content_type: str) -> int:
    """The largest submission body: the file limit plus a margin; JSON escapes text, so it may take twice that."""
    file_bytes = max_source_bytes * 2 if content_type.startswith("application/json") else max_source_bytes
    return file_bytes + MARGIN_BYTES


class BodyLimit:
    """ASGI middleware: ``limit_for(scope, content_type)`` gives each request's largest body in bytes and the
    sentence refusing a larger one (it names what the route carries), ``too_large`` the answer to one over it (JSON
    unless given: a browser gets a page)."""

    def __init__(
        self,
        app: ASGIApp,
        limit_for: Callable[[Scope, str], tuple[int, str]],
        too_large: Callable[[Scope, str], ASGIApp] = lambda scope, message: error("too_large", message),
    ) -> None:
        self.app = app
        self.limit_for = limit_for
        self.too_large = too_large

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        limit, message = self.limit_for(scope, headers.get("content-type", ""))
        declared = headers.get("content-length", "")
        if not declared.isdigit() and declared:
            await error("invalid", "The Content-Length header is not a number.")(scope, receive, send)
            return
        if declared and int(declared) > limit:
            await self.too_large(scope, message)(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            event = await receive()
            if event["type"] == "http.request":
                received += len(event.get("body", b""))
                if received > limit:
                    raise TooLarge(message)
            return event

        await self.app(scope, counted, send)
