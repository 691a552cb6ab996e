"""What a crowd of visitors costs: anonymous answers kept for a second, and one request per page at a time.

A closing challenge draws many people to the same few pages. A visitor's request (a GET with neither an
``Authorization`` header nor a cookie: nobody's own view) is answered from a copy made at most ``ttl_s`` ago, and
while a page is being made, visitors asking for it wait for that one instead of each asking the core: 64 people
on one ranking cost one request to the core a second. The answers say so (``Cache-Control: public, max-age``), so
a browser or a proxy may keep them that long too; those from the copy carry an ``ETag`` (a hash of the page), and a
browser that asks again with ``If-None-Match`` while the copy holds that page gets ``304 Not Modified``, no body.
A request sent with ``Cache-Control: no-cache`` (a reload) gets a fresh page. Only complete 200 answers are kept,
``/v1/health`` never: a probe asks what is true now.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

TTL_S = 1.0
MAX_ENTRIES = 512
MAX_BODY_BYTES = 2 << 20
UNCACHED = ("/v1/health",)


@dataclass
class _Entry:
    start: Message
    body: bytes
    expires: float
    etag: bytes


class PageCache:
    """ASGI middleware: visitors' GET answers kept for ``ttl_s``, and concurrent asks for one page made once."""

    def __init__(self, app: ASGIApp, ttl_s: float = TTL_S) -> None:
        self.app, self.ttl_s = app, ttl_s
        self._entries: dict[str, _Entry] = {}
        self._making: dict[str, asyncio.Future[_Entry | None]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _a_visitors_get(scope) or self.ttl_s <= 0:
            return await self.app(scope, receive, send)
        key = scope["path"] + "?" + scope.get("query_string", b"").decode("latin-1")
        now = asyncio.get_running_loop().time()
        entry = self._entries.get(key)
        if entry is not None and entry.expires > now:
            return await _replay(entry, send, dict(scope["headers"]).get(b"if-none-match"))
        if key in self._making:
            made = await asyncio.shield(self._making[key])
            return await (_replay(made, send) if made else self.app(scope, receive, send))
        self._making[key] = asyncio.get_running_loop().create_future()
        made = None
        try:
            made = await self._make(scope, receive, send, now)
        finally:
            if made is not None:
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries = {k: e for k, e in self._entries.items() if e.expires > now}
                self._entries[key] = made
            self._making.pop(key).set_result(made)

    async def _make(self, scope: Scope, receive: Receive, send: Send, now: float) -> _Entry | None:
        """Answer through the app, keeping a copy of a complete 200 answer."""
        start: Message | None = None
        body: list[bytes] = []
        complete = False

        async def keep(message: Message) -> None:
            nonlocal start, complete
            if message["type"] == "http.response.start":
                if message["status"] == 200:
                    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"cache-control"]
                    message = {**message, "headers": [*headers, (b"cache-control", self._cache_control())]}
                start = message
            elif message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                complete = not message.get("more_body", False)
            await send(message)

        await self.app(scope, receive, keep)
        size = sum(len(part) for part in body)
        if start is None or start["status"] != 200 or not complete or size > MAX_BODY_BYTES:
            return None
        whole = b"".join(body)
        etag = b'"' + hashlib.sha256(whole).hexdigest()[:32].encode() + b'"'
        return _Entry({**start, "headers": [*start["headers"], (b"etag", etag)]}, whole, now + self.ttl_s, etag)

    def _cache_control(self) -> bytes:
        return f"public, max-age={max(1, int(self.ttl_s))}".encode()


def _a_visitors_get(scope: Scope) -> bool:
    if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] in UNCACHED:
        return False
    headers = dict(scope.get("headers", []))
    no_cache = b"no-cache" in headers.get(b"cache-control", b"") or b"no-cache" in headers.get(b"pragma", b"")
    return not (no_cache or b"authorization" in headers or b"cookie" in headers)


async def _replay(entry: _Entry, send: Send, if_none_match: bytes | None = None) -> None:
    """The kept answer, or ``304 Not Modified`` to a browser that holds it already."""
    if if_none_match is not None and entry.etag in (tag.strip() for tag in if_none_match.split(b",")):
        headers = [(k, v) for k, v in entry.start["headers"] if k.lower() in (b"etag", b"cache-control")]
        await send({"type": "http.response.start", "status": 304, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    await send(entry.start)
    await send({"type": "http.response.body", "body": entry.body})
