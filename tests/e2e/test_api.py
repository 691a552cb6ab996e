"""The HTTP API against the real core, NATS and DuckDB (httpx's ASGI transport; test_cli.py goes over real HTTP)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from api_kit import REPO, token_of
from httpx_sse import aconnect_sse

from adapters.api.app import create_app
from core.contracts.bus import Bus
from core.contracts.commands import file_value
from core.contracts.config import Settings
from core.contracts.messages import Reply, decode
from core.contracts.tokenformat import token_sha256
from core.contracts.version import __version__
from runners.fake import FakeRunner

CORRECT = (Path(__file__).parent.parent / "fixtures" / "harness" / "submissions" / "correct.py").read_text()


@dataclass
class Client:
    system: object
    http: httpx.AsyncClient
    token: str

    def auth(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}

    async def get(self, path: str, token: str | None = None, **params) -> httpx.Response:
        return await self.http.get(path, params=params, headers=self.auth(token))

    async def submit(self, source: str = CORRECT, token: str | None = None, **fields) -> httpx.Response:
        data = {"leaderboard": "vectoradd", **fields}
        return await self.http.post(
            "/v1/submissions", files={"file": ("k.py", source.encode())}, data=data, headers=self.auth(token)
        )


def problem(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()["error"]
    return response.status_code, body["code"], body["message"]


@pytest.fixture
async def api(make_system) -> AsyncIterator[Client]:
    system = await make_system(FakeRunner(), rate_limit=3, max_source_bytes=4096, admins=["discord:root"])
    transport = httpx.ASGITransport(app=create_app(system.bus, system.settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
        yield Client(system, http, await token_of(system, "ada"))


async def test_queries_answer_with_the_cores_reply(api):
    listing = await api.get("/v1/leaderboards")
    assert listing.status_code == 200
    reply = decode(Reply, listing.content)
    assert reply.title == "Leaderboards" and reply.data["leaderboards"][0]["name"] == "vectoradd"
    show = decode(Reply, (await api.get("/v1/leaderboards/vectoradd", gpu="CPU")).content)
    assert show.title == "vectoradd leaderboard"
    for path in (
        "/v1/leaderboards/vectoradd/task",
        "/v1/leaderboards/vectoradd/mine",
        "/v1/queue",
        "/v1/stats",
        "/v1/eval-code",
        "/v1/leaderboards/vectoradd/history",
        "/v1/tokens",
        "/v1/me",
    ):
        assert (await api.get(path)).status_code == 200, path
    assert decode(Reply, (await api.get("/v1/me")).content).data["display_name"] == "Ada"


async def test_without_a_good_token_every_route_is_401_with_one_sentence(api):
    for headers in (
        {},
        {"Authorization": "Basic YWRhOnB3"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer " + "x" * 500},
    ):
        response = await api.http.get("/v1/leaderboards/vectoradd/mine", headers=headers)
        status, code, message = problem(response)
        assert (status, code) == (401, "unauthenticated") and "kernelrank login" in message
        assert response.headers["www-authenticate"].startswith("Bearer")
    status, code, message = problem(await api.get("/v1/leaderboards", token="kr_unknown"))
    assert (status, code) == (401, "unauthenticated") and "not valid" in message  # a bad token is no visitor
    public = await api.http.get("/v1/leaderboards")  # rankings are public: no header, a visitor
    assert public.status_code == 200 and public.json()["data"]["leaderboards"][0]["name"] == "vectoradd"
    refused = await api.http.post("/v1/submissions", files={"file": ("k.py", b"x")})
    assert refused.status_code == 401
    assert api.system.store.stats().submissions == 0


async def test_a_revoked_token_stops_working_at_once(api):
    second = decode(Reply, (await api.http.post("/v1/tokens", headers=api.auth())).content).data
    assert (await api.get("/v1/me", token=second["token"])).status_code == 200
    revoked = await api.http.delete(f"/v1/tokens/{second['prefix']}", headers=api.auth())
    assert revoked.status_code == 200
    status, _, message = problem(await api.get("/v1/me", token=second["token"]))
    assert status == 401 and "revoked" in message
    assert (await api.get("/v1/me")).status_code == 200  # only that token


async def test_statuses_follow_the_refusal(api):
    assert problem(await api.get("/v1/leaderboards/nope"))[:2] == (404, "not_found")
    assert problem(await api.get("/v1/nothing-here"))[:2] == (404, "not_found")
    assert problem(await api.http.put("/v1/leaderboards", headers=api.auth()))[:2] == (405, "method_not_allowed")
    assert problem(await api.get("/v1/submissions/abc"))[:2] == (400, "invalid")
    for limit in ("abc", "0", "10000000000"):  # bad input is a sentence, never a crash
        assert problem(await api.get("/v1/leaderboards/vectoradd", limit=limit))[:2] == (400, "invalid")
    assert (await api.get("/v1/leaderboards/vectoradd", limit="3")).status_code == 200

    accepted = await api.submit()
    assert accepted.status_code == 202
    theirs = decode(Reply, accepted.content).data["submission_id"]
    bob = await token_of(api.system, "bob")
    public = await api.get(f"/v1/submissions/{theirs}", token=bob)  # someone else's: what is public only
    assert public.status_code == 200 and "someone else's" in public.text and "def custom_kernel" not in public.text
    assert not public.json()["data"]["details"] and api.system.store.submission_detail(theirs) is not None
    own = await api.get(f"/v1/submissions/{theirs}")
    assert own.status_code == 200 and own.json()["data"]["details"] and "def custom_kernel" in own.text

    for _ in range(2):
        assert (await api.submit()).status_code == 202
    limited = await api.submit()
    assert problem(limited)[:2] == (429, "rate_limited") and 1 <= int(limited.headers["retry-after"]) <= 60

    admin = await token_of(api.system, "root")
    refused = await api.http.post("/v1/admin/tokens", json={"name": "cy"}, headers=api.auth())
    assert problem(refused)[:2] == (403, "forbidden")
    issued = await api.http.post("/v1/admin/tokens", json={"name": "cy"}, headers=api.auth(admin))
    cy = decode(Reply, issued.content).data["token"]
    assert decode(Reply, (await api.get("/v1/me", token=cy)).content).data["display_name"] == "cy"


async def test_submissions_as_a_form_or_as_json(api):
    form = decode(Reply, (await api.submit(gpu="CPU", mode="test")).content)
    assert form.data["mode"] == "test" and form.data["runs"][0]["gpu"] == "CPU"
    as_json = await api.http.post(
        "/v1/submissions",
        headers=api.auth(),
        json={"file_name": "mine.py", "source": CORRECT, "leaderboard": "vectoradd"},
    )
    assert as_json.status_code == 202 and "mine.py" in decode(Reply, as_json.content).parts[0].text
    cases = [
        ({"content": b"x", "headers": {"Content-Type": "text/plain"}}, 415, "unsupported"),
        ({"json": {"file_name": "k.py"}}, 400, "invalid"),
        ({"json": ["k.py"]}, 400, "invalid"),
        ({"content": b"{not json", "headers": {"Content-Type": "application/json"}}, 400, "invalid"),
        ({"data": {"leaderboard": "vectoradd"}, "files": {"other": ("k.py", b"x")}}, 400, "invalid"),
        ({"json": {"file_name": "k.py", "source": "x", "gpus": [1]}}, 400, "invalid"),
        ({"json": {"file_name": "k.py", "source": "x", "mode": ["test"]}}, 400, "invalid"),
        # once answered 500: JSON nested deeply (30,000 fits this body limit), a lone surrogate escape
        ({"content": b"[" * 30_000 + b"]" * 30_000, "headers": {"Content-Type": "application/json"}}, 400, "invalid"),
        (
            {
                "content": b'{"file_name": "k.py", "leaderboard": "vectoradd", "source": "x = \\ud800"}',
                "headers": {"Content-Type": "application/json"},
            },
            400,
            "invalid",
        ),
    ]
    for options, status, code in cases:
        headers = {**api.auth(), **options.pop("headers", {})}
        assert problem(await api.http.post("/v1/submissions", headers=headers, **options))[:2] == (status, code)
    nested = await api.http.post(
        "/v1/link",
        content=b'{"code":' + b"[" * 30_000 + b"]" * 30_000 + b"}",
        headers={**api.auth(), "Content-Type": "application/json"},
    )
    assert problem(nested)[:2] == (400, "invalid") and "nests JSON too deeply" in problem(nested)[2]
    lone = await api.http.post("/v1/link", content=b'{"code": "\\udc80"}', headers=api.auth())
    assert problem(lone)[:2] == (400, "invalid") and "lone surrogate" in problem(lone)[2]
    refused = await api.submit(source="", leaderboard="vectoradd")  # the core's own checks still apply
    assert problem(refused)[:2] == (400, "invalid") and "empty" in problem(refused)[2]
    assert api.system.store.stats().submissions == 2


async def test_a_submission_takes_its_registry_entrys_arguments_and_refuses_any_other(api):
    """``POST /v1/submissions`` once took any field and ignored the unknown ones: a typo submitted with no
    leaderboard named. Now it reads ``submit``'s entry like every route: names, aliases, short names, no others."""
    typos = [
        {"json": {"gpu": "H100", "leaderbord": "vectoradd"}},  # the house plan's example, word for word
        {"json": {"file_name": "k.py", "source": CORRECT, "gpu": "CPU", "leaderbord": "vectoradd"}},
        {"files": {"file": ("k.py", CORRECT.encode())}, "data": {"leaderbord": "vectoradd"}},
    ]
    for options in typos:
        status, code, message = problem(await api.http.post("/v1/submissions", headers=api.auth(), **options))
        assert (status, code) == (400, "invalid")
        assert message == "`leaderbord` is not an argument of submit; it takes file, leaderboard, gpu, mode."
    assert api.system.store.stats().submissions == 0

    spellings = [
        {"json": {"file_name": "k.py", "source": CORRECT, "lb": "vectoradd", "gpus": "CPU", "m": "test"}},
        {"json": {"file": file_value("k.py", CORRECT.encode()), "leaderboard_name": "vectoradd", "mode": None}},
        {"files": {"script": ("k.py", CORRECT.encode())}, "data": {"l": "vectoradd", "g": ["CPU"]}},
    ]
    for options in spellings:
        accepted = await api.http.post("/v1/submissions", headers=api.auth(), **options)
        assert accepted.status_code == 202, accepted.text
        assert decode(Reply, accepted.content).data["leaderboard"] == "vectoradd"
    assert api.system.store.stats().submissions == 3


async def test_bodies_over_the_limit_are_refused_before_they_are_read(api):
    big = "x = 1\n" * 15_000  # 90 KB: over the 4 KiB file limit and the 64 KiB margin
    declared = await api.submit(source=big)
    status, code, message = problem(declared)
    assert (status, code) == (413, "too_large") and "at most 4 KiB" in message

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: cut off once past the limit
        yield b'{"file_name": "k.py", "source": "'
        for _ in range(1000):
            yield b"x" * 1024
        yield b'"}'

    chunked = await api.http.post(
        "/v1/submissions", content=chunks(), headers={**api.auth(), "Content-Type": "application/json"}
    )
    assert problem(chunked)[:2] == (413, "too_large")
    small_route = await api.http.post(
        "/v1/admin/tokens",
        content=b"{" + b" " * 100_000 + b"}",
        headers={**api.auth(), "Content-Type": "application/json"},
    )
    assert problem(small_route)[:2] == (413, "too_large")
    near_limit = await api.submit(source="x = 1\n" * 600)  # 3.6 KB: in, and judged by the core
    assert near_limit.status_code == 202
    in_the_margin = await api.submit(source="x = 1\n" * 4000)  # 24 KB: through the API, refused by the core
    assert problem(in_the_margin)[:2] == (400, "invalid") and "the limit is 4 KiB" in problem(in_the_margin)[2]
    assert api.system.store.stats().submissions == 1


async def test_a_submission_streams_its_progress_and_reports(api):
    events = []
    async with aconnect_sse(
        api.http,
        "POST",
        "/v1/submissions",
        files={"file": ("k.py", CORRECT.encode())},
        data={"leaderboard": "vectoradd"},
        headers={**api.auth(), "Accept": "text/event-stream"},
    ) as source:
        assert source.response.status_code == 200
        async for event in source.aiter_sse():
            events.append(event)
    assert [e.event for e in events][0] == "reply" and events[-1].event == "end"
    replies = [decode(Reply, e.data) for e in events if e.event == "reply"]
    accepted, final = replies[0], replies[-1]
    assert "queued as #1" in accepted.parts[0].text
    assert final.final and final.in_reply_to == accepted.data["runs"][0]["run_id"] and final.data["status"] == "passed"

    refused = await api.http.post(
        "/v1/submissions",
        files={"file": ("k.txt", b"x")},
        data={"leaderboard": "v"},
        headers={**api.auth(), "Accept": "text/event-stream"},
    )
    assert refused.headers["content-type"].startswith("application/json") and refused.status_code == 400


async def test_the_token_and_its_hash_never_reach_a_log(api, caplog):
    caplog.set_level(logging.DEBUG)
    made = decode(Reply, (await api.http.post("/v1/tokens", headers=api.auth())).content).data["token"]
    await api.get("/v1/leaderboards", token=made)
    await api.get("/v1/leaderboards/nope", token=made)
    await api.submit(token=made)
    await api.get("/v1/me", token=made + "x")
    await api.http.delete(f"/v1/tokens/{made[:12]}", headers=api.auth())
    await api.get("/v1/me", token=made)
    for secret in (api.token, made, token_sha256(api.token), token_sha256(made)):
        assert secret not in caplog.text
    assert "Authorization" not in caplog.text and "Bearer" not in caplog.text


@pytest.mark.slow
async def test_without_a_core_the_api_says_so(nats_url, tmp_path):
    bus = await Bus.connect(nats_url, name="lonely-api")
    try:
        app = create_app(bus, Settings(home=tmp_path))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as http:
            health = await http.get("/v1/health")
            assert health.status_code == 503
            assert health.json() == {"api": "ok", "core": "unavailable", "version": __version__}
            status, code, message = problem(await http.get("/v1/leaderboards", headers={"Authorization": "Bearer t"}))
            assert (status, code) == (503, "unavailable") and "not running" in message
            submitted = await http.post(
                "/v1/submissions", files={"file": ("k.py", b"x")}, headers={"Authorization": "Bearer t"}
            )
            assert problem(submitted)[:2] == (503, "unavailable")
    finally:
        await bus.close()


def test_the_api_serves_the_registry_routes_health_and_the_web_pages_only():
    from adapters.api.popcorn import popcorn_routes
    from core.contracts.registry import COMMANDS

    served = {
        (method, route.path)
        for route in create_app(None, Settings()).routes
        for method in route.methods
        if method != "HEAD"
    }
    declared = {(route.method, route.path) for spec in COMMANDS for route in spec.routes}
    pages = {
        ("GET", "/"),
        ("GET", "/leaderboards/{leaderboard}/{gpu}"),
        ("GET", "/leaderboards/{leaderboard}"),
        ("GET", "/leaderboards/{leaderboard}/across-gpus"),
        ("GET", "/leaderboards/{leaderboard}/files/{name}"),
        ("GET", "/leaderboards/{leaderboard}/templates/{lang}"),
        ("GET", "/submit"),
        ("POST", "/submit"),
        ("GET", "/submissions/{id:int}/live"),
        ("GET", "/submissions/{id:int}/events"),
        ("GET", "/people/{person:int}"),
        ("GET", "/submissions/{id:int}"),
        ("GET", "/challenges/{title:path}"),
        ("GET", "/sign-in"),
        ("POST", "/sign-in"),
        ("POST", "/sign-out"),
    }
    popcorn = {(m, r.path) for r in popcorn_routes(None, None) for m in r.methods if m != "HEAD"}
    operators = {("GET", path) for path in ("/v1/health", "/v1/openapi.json", "/v1/docs", "/metrics")}
    assert served == declared | operators | pages | popcorn
    assert not any(p.startswith("/v1") for _, p in pages | popcorn)


async def test_a_busy_port_is_named_with_what_to_change(nats_url, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "KERNELRANK_NATS_URL": nats_url,
            "KERNELRANK_API_PORT": port,
            "KERNELRANK_HOME": str(tmp_path),
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "core.launch.main",
            "api",
            cwd=tmp_path,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out = (await asyncio.wait_for(proc.communicate(), 60))[0].decode()
    assert proc.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in out and "KERNELRANK_API_PORT" in out


async def test_an_unforeseen_failure_is_a_sentence_not_a_traceback(tmp_path):
    class Broken:
        async def request(self, command, timeout_s=5.0):
            raise RuntimeError("secret internal detail")

    transport = httpx.ASGITransport(app=create_app(Broken(), Settings(home=tmp_path)), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
        response = await http.get("/v1/stats", headers={"Authorization": "Bearer t"})
    status, code, message = problem(response)
    assert (status, code) == (500, "internal") and "secret" not in response.text and message.endswith(".")


async def test_a_file_argument_travels_in_the_json_body_and_admin_delete_takes_its_arguments(api):
    admin = await token_of(api.system, "root")
    reference = (Path(__file__).parents[2] / "problems" / "identity" / "reference.py").read_bytes()
    body = {"name": "weekly", "problem": file_value("reference.py", reference), "gpu": ["CPU"]}
    refused = await api.http.post("/v1/admin/leaderboards", json=body, headers=api.auth())
    assert problem(refused)[:2] == (403, "forbidden")
    broken = {**body, "problem": {"name": "p.zip", "base64": "not base64!"}}
    assert (
        "not valid base64"
        in problem(await api.http.post("/v1/admin/leaderboards", json=broken, headers=api.auth(admin)))[2]
    )
    wrong = {**body, "gpu": [{"no": "dicts"}]}
    assert problem(await api.http.post("/v1/admin/leaderboards", json=wrong, headers=api.auth(admin)))[:2] == (
        400,
        "invalid",
    )
    loaded = await api.http.post("/v1/admin/leaderboards", json=body, headers=api.auth(admin))  # reaches the core
    assert loaded.status_code == 202  # a lone first-format reference: its run on the CPU decides
    assert decode(Reply, loaded.content).data["state"] == "validating"
    asked = await api.http.delete("/v1/admin/leaderboards/vectoradd", headers=api.auth(admin))
    assert decode(Reply, asked.content).data["state"] == "confirm"
    gone = await api.http.delete(
        "/v1/admin/leaderboards/vectoradd", params={"confirm": "vectoradd"}, headers=api.auth(admin)
    )
    assert decode(Reply, gone.content).data["state"] == "deleted"
