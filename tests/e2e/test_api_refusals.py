"""What the API refuses, each in one sentence naming the fault, and where the refusal lives: a file name that is a
path or holds a control character and a value of the wrong type are refused by the registry's checks the core runs
for every front end (``core.contracts``), a method a route does not take is 405 with ``Allow``, a body over its
limit names what the route carries."""

from __future__ import annotations

from test_api import CORRECT, api, problem  # noqa: F401  (the API against the real core, NATS and DuckDB)

from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, CommandKind, Platform, ReplyTo


async def test_a_file_name_must_be_a_plain_name(api):  # noqa: F811
    for name in ("../../../etc/passwd.py", "a\u0000.py", "sub/k.py", "a\\b.py", "x\n.py", ".."):
        body = {"leaderboard": "vectoradd", "file_name": name, "source": CORRECT}
        status, code, message = problem(await api.http.post("/v1/submissions", json=body, headers=api.auth()))
        assert (status, code) == (400, "invalid") and "not a plain file name" in message, name
    form = await api.submit(**{})  # a plain name still goes through
    assert form.status_code == 202
    assert api.system.store.stats().submissions == 1


async def test_gpu_names_are_text_whatever_the_front_end(api):  # noqa: F811
    for gpu in (5, True, [{"a": 1}], {"a": 1}, [5]):
        body = {"leaderboard": "vectoradd", "file_name": "k.py", "source": CORRECT, "gpu": gpu}
        status, code, message = problem(await api.http.post("/v1/submissions", json=body, headers=api.auth()))
        assert (status, code) == (400, "invalid") and "takes GPU names as text" in message, gpu
    # the core refuses it too: a command built by any front end
    actor, reply_to = Actor(Platform.DISCORD, "ada", "Ada"), ReplyTo(Platform.DISCORD, "c")
    refused = await api.system.bus.request(submit_command(actor, reply_to, "k.py", CORRECT.encode(), gpu=5))
    assert "takes GPU names as text" in refused.parts[0].text
    typed = await api.system.bus.request(query_command(actor, reply_to, CommandKind.SHOW, leaderboard=["x"]))
    assert "`leaderboard` takes text, not list" in typed.parts[0].text
    assert api.system.store.stats().submissions == 0


async def test_a_method_a_route_does_not_take_is_405_with_allow(api):  # noqa: F811
    for method in ("PUT", "OPTIONS", "PATCH"):
        response = await api.http.request(method, "/v1/leaderboards", headers=api.auth())
        status, code, message = problem(response)
        assert (status, code) == (405, "method_not_allowed") and "takes GET, not" in message, method
        assert "GET" in response.headers["allow"]


async def test_people_by_their_number_as_on_the_web(api):  # noqa: F811
    ada = api.system.store.find_person("discord", "ada")
    for who in (str(ada), f"%23{ada}", "Ada"):
        shown = await api.get(f"/v1/people/{who}")
        assert shown.status_code == 200 and shown.json()["data"]["name"] == "Ada", who
    assert problem(await api.get("/v1/people/999"))[:2] == (404, "not_found")


async def test_size_and_text_refusals_name_what_the_route_carries(api):  # noqa: F811
    for path in ("/v1/tokens", "/sign-in"):
        big = await api.http.post(path, content=b"x" * 70_000, headers={**api.auth(), "content-type": "text/plain"})
        status, code, message = problem(big)
        assert (status, code) == (413, "too_large") and "kernel" not in message and "arguments" in message, path
    huge = await api.submit("x" * 80_000)
    assert problem(huge)[:2] == (413, "too_large") and "kernel files may be at most 4 KiB" in problem(huge)[2]
    surrogate = b'{"reason": "bad \\ud800 thing"}'
    headers = {**api.auth(), "content-type": "application/json"}
    status, _, message = problem(await api.http.post("/v1/submissions/1/reports", content=surrogate, headers=headers))
    assert status == 400 and "surrogate" in message and "file" not in message
