"""Visitors' answers are kept for a moment and made once for a crowd; anyone signed in, a reload, an error and the
health probe always reach the app."""

from __future__ import annotations

import asyncio

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from adapters.api.cache import PageCache


def counted_app(ttl_s: float = 60.0) -> tuple[httpx.AsyncClient, dict[str, int], asyncio.Event]:
    calls: dict[str, int] = {}
    gate = asyncio.Event()
    gate.set()

    async def page(request: Request) -> PlainTextResponse:
        calls[request.url.path] = calls.get(request.url.path, 0) + 1
        await gate.wait()
        status = 404 if request.url.path == "/missing" else 200
        return PlainTextResponse(f"{request.url.path} #{calls[request.url.path]}", status_code=status)

    app = Starlette(routes=[Route("/{path:path}", page)])
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=PageCache(app, ttl_s)), base_url="http://t")
    return client, calls, gate


async def test_a_visitors_page_is_made_once_and_says_it_may_be_kept() -> None:
    client, calls, _ = counted_app()
    async with client:
        first, second = await client.get("/ranking"), await client.get("/ranking")
        assert first.text == second.text == "/ranking #1" and calls == {"/ranking": 1}
        assert second.headers["cache-control"] == "public, max-age=60"
        assert (await client.get("/ranking?gpu=H100")).text == "/ranking #2"  # another query, another page


async def test_a_crowd_asking_at_once_costs_one_request() -> None:
    client, calls, gate = counted_app()
    gate.clear()
    async with client:
        crowd = [asyncio.create_task(client.get("/person")) for _ in range(20)]
        await asyncio.sleep(0.05)
        gate.set()
        answers = await asyncio.gather(*crowd)
    assert {a.text for a in answers} == {"/person #1"} and calls == {"/person": 1}


async def test_signed_in_reloads_errors_and_health_always_reach_the_app() -> None:
    client, calls, _ = counted_app()
    async with client:
        for headers in ({"Authorization": "Bearer x"}, {"Cookie": "kr=1"}, {"Cache-Control": "no-cache"}):
            await client.get("/mine", headers=headers)
        await client.get("/missing")
        await client.get("/missing")
        await client.get("/v1/health")
        await client.get("/v1/health")
    assert calls == {"/mine": 3, "/missing": 2, "/v1/health": 2}


async def test_a_kept_page_expires() -> None:
    client, calls, _ = counted_app(ttl_s=0.05)
    async with client:
        await client.get("/home")
        await asyncio.sleep(0.1)
        assert (await client.get("/home")).text == "/home #2"


async def test_a_browser_holding_the_page_gets_not_modified() -> None:
    client, calls, _ = counted_app()
    async with client:
        await client.get("/ranking")
        kept = await client.get("/ranking")  # from the copy, which carries the page's tag
        again = await client.get("/ranking", headers={"If-None-Match": kept.headers["etag"]})
        other = await client.get("/ranking", headers={"If-None-Match": '"something else"'})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == kept.headers["etag"]
    assert other.status_code == 200 and other.text == "/ranking #1" and calls == {"/ranking": 1}
