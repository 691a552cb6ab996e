"""A leaderboard's problem page in a real Chromium against a running kernelrank: the statement, the shapes, the GPUs,
the deadline and challenge, the top three, the downloads and the command lines; and the ranking across GPUs."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import httpx
from browser_kit import Browser, Site
from test_pages import schedule_challenges

from adapters.api.app import create_app
from core.contracts.config import Settings
from core.contracts.messages import Command, CommandKind, Platform, Reply, ReplyTo
from tests.e2e.conftest import FIXTURES

FETCH = "return await (await fetch(arguments[0])).text()"


async def test_the_problem_page_says_what_to_write_and_how_to_submit_it(site: Site, browser: Browser) -> None:
    schedule_challenges(site)
    store = site.system.store
    store.upsert_leaderboard(
        dataclasses.replace(store.get_leaderboard("vectoradd"), deadline=datetime.now(UTC) + timedelta(days=2, hours=5))
    )
    site.system.service.deps.boards.forget("vectoradd")  # as the core's own writes do
    await browser.get(site.url + "/")
    await browser.script("[...document.querySelectorAll('main h2 a')].find(a => a.textContent == 'vectoradd').click()")
    text = await browser.arrive(r"/leaderboards/vectoradd$")
    assert "Add two fp32 vectors into the output buffer" in text  # the statement, rendered
    assert "size=127, size=129, size=1000" in text and "size=1048576, size=4194304" in text  # seeds left out
    assert (
        "Runs on CPU." in text
        and "ranked by the geometric mean of them" in text
        and "closes in 2 days" in text
        and "Week 48" in text
    )
    top = await browser.script("return [...document.querySelectorAll('#top ~ div tbody tr')].map(r => r.innerText)")
    ranking = site.system.store.ranking("vectoradd", "CPU", 3)
    assert [row.split("\t")[1] for row in top] == [r.display_name for r in ranking] and len(top) == 2
    assert "kernelrank submit kernel.py --leaderboard vectoradd --gpu CPU --mode ranked" in text
    assert "/leaderboard submit ranked script:kernel.py leaderboard:vectoradd gpu:CPU" in text
    assert "@kernelrank ranked vectoradd CPU" in text
    reference = await browser.script(FETCH, "/leaderboards/vectoradd/files/reference.py")
    assert reference == (FIXTURES / "vectoradd" / "reference.py").read_text()
    missing = await browser.script("return (await fetch('/leaderboards/vectoradd/files/secret.py')).status")
    assert missing == 404


async def test_a_statement_cannot_carry_a_script(site: Site, browser: Browser) -> None:
    store = site.system.store
    board = store.get_leaderboard("vectoradd")
    hostile = "Add them. <script>document.title = 'owned'</script> [x](javascript:alert(1)) **fast**"
    problem = board.problem | {"task": board.problem["task"] | {"description": hostile}}
    store.upsert_leaderboard(dataclasses.replace(board, problem=problem))
    site.system.service.deps.boards.forget("vectoradd")
    await browser.get(site.url + "/leaderboards/vectoradd")
    assert await browser.script("return document.title") != "owned"
    assert await browser.script("return document.querySelector('.statement strong').textContent") == "fast"
    assert await browser.script("return document.querySelectorAll('.statement a[href^=javascript]').length") == 0


async def test_the_ranking_across_gpus_has_a_column_per_gpu() -> None:
    """The core's ranking on two GPUs (as ``show`` sends it) becomes one row per person, a column per GPU."""

    def row(rank: int, person: int, name: str, score: float) -> dict:
        return {"rank": rank, "person_id": person, "name": name, "score_us": score, "submission_id": person}

    rankings = {"H100": [row(1, 2, "Bob", 5.0), row(2, 1, "Ada", 6.0)], "A100": [row(1, 1, "Ada", 9.0)]}
    asked: list[Command] = []

    class Core:
        async def request(self, command: Command, timeout_s: float = 5.0) -> Reply:
            asked.append(command)
            data = {"leaderboard": "matmul", "rankings": rankings}
            return Reply(reply_to=ReplyTo(Platform.WEB), parts=[], data=data)

    transport = httpx.ASGITransport(app=create_app(Core(), Settings()))
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
        page = await http.get("/leaderboards/matmul/across-gpus")
    assert page.status_code == 200
    assert asked[0].kind is CommandKind.SHOW and "gpu" not in asked[0].args
    body = page.text
    assert body.index(">H100<") < body.index(">A100<")  # the core's order of GPUs
    bob, ada = body.index(">Bob<"), body.index(">Ada<")
    assert ada < bob  # both are first on some GPU: Ada entered more GPUs
    ada_row = body[ada : body.index("</tr>", ada)]
    assert "6 µs" in ada_row and "9 µs" in ada_row and "(#2)" in ada_row and "(#1)" in ada_row
    bob_row = body[bob : body.index("</tr>", bob)]
    assert "5 µs" in bob_row and bob_row.count("-</span>") == 1  # no entry on the A100


async def test_the_ranking_page_reads_a_past_round_on_request() -> None:
    """``?round=`` goes to the core's ``show`` as its ``round`` argument, and the page says which round it shows."""
    asked: list[Command] = []

    class Core:
        async def request(self, command: Command, timeout_s: float = 5.0) -> Reply:
            asked.append(command)
            row = {"rank": 1, "person_id": 1, "name": "Ada", "score_us": 10.0, "submitted_at": "2026-11-23T10:00"}
            data = {"leaderboard": "vectoradd", "round": "round 1 of 2, from its start to 2026-11-24 12:00 UTC"}
            shown = {"rankings": {"CPU": [row]}, "more": {"CPU": False}, "page": 1}  # as the core answers show
            return Reply(reply_to=ReplyTo(Platform.WEB), parts=[], data=data | shown)

    transport = httpx.ASGITransport(app=create_app(Core(), Settings()))
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
        page = await http.get("/leaderboards/vectoradd/CPU?round=1")
    assert page.status_code == 200
    assert asked[0].kind is CommandKind.SHOW and asked[0].args["round"] == "1"
    assert "Showing round 1 of 2, from its start to 2026-11-24 12:00 UTC" in page.text and ">Ada<" in page.text
