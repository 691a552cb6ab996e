"""Every command of the registry exists in every front end, with its arguments and its aliases, or its entry
says why not: the terminal client, the API, Discord (the real discord.py command tree) and Slack. ``submit`` too:
an argument added to its entry alone reaches the core from all four, and from the fifth, the web's submit form."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from discord import app_commands

from adapters import cli
from adapters.api.app import create_app
from adapters.api.web_common import COOKIE
from adapters.cli import parser_for, pick_route
from adapters.credentials import Credentials
from adapters.discord.app import KernelrankBot
from adapters.discord.commands import submit as discord_submit
from adapters.discord.commands.registered import CHOICE_COMMANDS
from adapters.slack import modal
from adapters.slack.grammar import SUBCOMMANDS, parse, parse_submit, submit_usage
from core.contracts.config import Settings
from core.contracts.messages import Command, CommandKind, Platform, Reply, ReplyTo, decode
from core.contracts.registry import BY_KIND, COMMANDS, FRONT_ENDS, Arg, ArgKind, Spec, find

REPO = Path(__file__).resolve().parents[2]


def _offered(front_end: str) -> list[Spec]:
    return [spec for spec in COMMANDS if spec.offered_on(front_end)]


def test_a_command_left_out_of_a_front_end_says_why() -> None:
    for spec in COMMANDS:
        assert set(spec.not_on) <= set(FRONT_ENDS), spec.name
        assert all(reason.strip() for reason in spec.not_on.values()), spec.name


@pytest.mark.parametrize("spec", _offered("terminal"), ids=lambda s: s.name)
def test_terminal(spec: Spec) -> None:
    for spelling in (spec.words, *spec.aliases):
        assert find(list(spelling)) == (spec, len(spelling))
    options = {action.dest for action in parser_for(spec)._actions}
    assert {arg.name for arg in spec.args} <= options


def test_api() -> None:
    served = {(method, route.path) for route in create_app(None, Settings()).routes for method in route.methods}
    for spec in _offered("api"):
        assert spec.routes, spec.name
        assert {(route.method, route.path) for route in spec.routes} <= served, spec.name
        for route in spec.routes:  # a path parameter is an argument of the command
            assert all(spec.arg(param) for param in route.path_params), (spec.name, route.path)


def _discord_commands() -> dict[str, app_commands.Command | app_commands.Group]:
    bot = KernelrankBot(Settings(), None)
    found: dict[str, app_commands.Command | app_commands.Group] = {}

    def walk(command: app_commands.Command | app_commands.Group) -> None:
        found[command.qualified_name] = command
        for child in getattr(command, "commands", []):
            walk(child)

    for top in bot.tree.get_commands():
        walk(top)
    return found


@pytest.mark.parametrize("spec", _offered("discord"), ids=lambda s: s.name)
def test_discord(spec: Spec) -> None:
    commands = _discord_commands()
    for spelling in (spec.words, *spec.aliases):
        name = " ".join(spelling if spelling[0] == "admin" else ("leaderboard", *spelling))
        assert name in commands, f"/{name} is not a Discord command"
        leaves = (
            [commands[name]]
            if isinstance(commands[name], app_commands.Command)
            else [c for c in commands[name].commands if isinstance(c, app_commands.Command)]
        )
        by_choice = spec.arg(CHOICE_COMMANDS[spec.kind]) if spec.kind in CHOICE_COMMANDS else None  # submit ranked
        if by_choice:
            assert [leaf.name for leaf in leaves] == list(by_choice.choices)
        for leaf in leaves:
            options = {p.name for p in leaf.parameters}
            for arg in spec.args:
                if arg is not by_choice:
                    assert {arg.name, *arg.aliases} & options, (leaf.qualified_name, arg.name)


@pytest.mark.parametrize("spec", _offered("slack"), ids=lambda s: s.name)
def test_slack(spec: Spec) -> None:
    for spelling in (spec.words, *spec.aliases):
        sub = SUBCOMMANDS[" ".join(spelling)]
        assert sub.kind is spec.kind
        files = {arg.name for arg in spec.args if arg.kind is ArgKind.FILE and not spec.submission}
        assert set(sub.params) == {arg.name for arg in spec.args} - files  # a file comes attached to a mention
        assert not files or "mention me with the file" in sub.about


def test_the_drift_the_house_plan_fixed() -> None:
    """``eval-code`` in the terminal, ``stats`` in Discord, ``show-personal`` in Slack were missing once."""
    shown = subprocess.run(
        [sys.executable, "-m", "core.launch.main", "eval-code", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0 and "usage: kernelrank eval-code" in shown.stdout
    assert "leaderboard stats" in _discord_commands()
    assert parse("show-personal vectoradd H100", "/kernelrank").sub.kind is CommandKind.MINE


def test_reading_a_review_never_decides_and_the_terminal_posts_a_decision() -> None:
    """``admin review`` is one command: its GET routes fix ``decide`` empty, so only a POST can invalidate."""
    spec = BY_KIND[CommandKind.REVIEW]
    assert all(route.fixed == {"decide": ""} for route in spec.routes if route.method == "GET")
    assert pick_route(spec, {"id": "12", "decide": None, "note": None}).method == "GET"
    decision = pick_route(spec, {"id": "12", "decide": "cheat", "note": "copies the answer"})
    assert (decision.method, decision.path) == ("POST", "/v1/admin/review/{id}/cheat")


# ----- submit: an argument added to its registry entry alone, seen by all five front ends -------------------------

NOTE = Arg("note", "a word for the parity test", aliases=("remark",))


@pytest.fixture
def submit_with_a_note() -> Iterator[Spec]:
    """``submit``'s entry with one more argument, added in the registry only: the entry is the one object every front
    end reads, frozen, so it is changed in place for this test and put back after."""
    spec = BY_KIND[CommandKind.SUBMIT]
    before = spec.args
    object.__setattr__(spec, "args", (*before, NOTE))
    yield spec
    object.__setattr__(spec, "args", before)


def _accepted() -> Reply:
    return Reply(reply_to=ReplyTo(Platform.CLI), parts=[], data={"runs": []})


def test_the_terminal_sends_a_new_submit_argument(submit_with_a_note, monkeypatch, tmp_path, capsys) -> None:
    sent: list[dict[str, Any]] = []

    class Recorder:  # in place of the HTTP client: what the terminal would send
        def __init__(self, *_: Any) -> None: ...

        def __enter__(self) -> Recorder:
            return self

        def __exit__(self, *_: Any) -> None: ...

        def submit(self, route, files, args, *, follow) -> Iterator[Reply]:
            sent.append({"route": (route.method, route.path), "files": set(files), **args})
            yield _accepted()

    monkeypatch.setattr(cli, "Api", Recorder)
    monkeypatch.setattr(cli, "resolve", lambda _: Credentials("http://api", "kr_token"))
    kernel = tmp_path / "k.py"
    kernel.write_text("#!POPCORN leaderboard vectoradd\n")
    for note in ("--note", "--remark"):
        assert cli.main("submit", [str(kernel), note, "fast", "-m", "test", "--no-wait"], Settings()) == 0
    assert [s["note"] for s in sent] == ["fast", "fast"]
    assert sent[0]["route"] == ("POST", "/v1/submissions") and sent[0]["files"] == {"file"}
    assert sent[0]["mode"] == "test" and "--note" in parser_for(submit_with_a_note).format_help()


async def test_the_api_takes_a_new_submit_argument(submit_with_a_note) -> None:
    received: list[Command] = []

    class Core:  # in place of the bus: what the API would send the core
        async def request(self, command: Command, timeout_s: float = 5.0) -> Reply:
            received.append(command)
            return _accepted()

    transport = httpx.ASGITransport(app=create_app(Core(), Settings()))
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
        auth = {"Authorization": "Bearer kr_token"}
        form = await http.post("/v1/submissions", files={"file": ("k.py", b"x")}, data={"note": "a"}, headers=auth)
        as_json = await http.post(
            "/v1/submissions", json={"file_name": "k.py", "source": "x", "remark": "b"}, headers=auth
        )
        typo = await http.post("/v1/submissions", json={"file_name": "k.py", "source": "x", "nte": "c"}, headers=auth)
    assert form.status_code == as_json.status_code == 202
    assert decode(Reply, form.content).data == {"runs": []}
    assert [cmd.args["note"] for cmd in received] == ["a", "b"]
    assert typo.status_code == 400 and "it takes file, leaderboard, gpu, mode, note." in typo.json()["error"]["message"]


async def test_discord_offers_and_sends_a_new_submit_argument(submit_with_a_note, monkeypatch) -> None:
    ranked = _discord_commands()["leaderboard submit ranked"]
    assert "note" in {p.name for p in ranked.parameters}
    sent: list[dict[str, str]] = []

    async def run_submission(svc, itx, script, args) -> None:
        sent.append({"script": script, **args})

    monkeypatch.setattr(discord_submit, "run_submission", run_submission)
    await ranked.callback(SimpleNamespace(user=SimpleNamespace(id=1)), script="k.py", leaderboard="vectoradd", note="a")
    assert sent == [{"script": "k.py", "mode": "ranked", "leaderboard": "vectoradd", "note": "a"}]


def test_slack_reads_and_asks_for_a_new_submit_argument(submit_with_a_note) -> None:
    assert parse_submit(["ranked", "vectoradd", "note=a"]) == {
        "mode": "ranked",
        "leaderboard": "vectoradd",
        "note": "a",
    }
    assert parse_submit(["--remark", "b"]) == {"note": "b"}
    assert submit_usage(submit_with_a_note) == "[MODE] [LEADERBOARD] [GPU ...] [note=...]"
    view = modal.submit_view([{"name": "vectoradd", "gpus": ["CPU"]}], {"note": "a"}, "{}")
    (field,) = [block for block in view["blocks"] if block.get("block_id") == "kr_note"]
    assert field["element"] == {"type": "plain_text_input", "action_id": "note", "initial_value": "a"}
    typed = {"state": {"values": {"kr_note": {"note": {"type": "plain_text_input", "value": "c"}}}}}
    assert modal.form_values(typed)[1]["note"] == "c"


def test_docs_security_names_every_public_command_as_open_to_visitors():
    from core.contracts.registry import Access

    doc = (Path(__file__).parents[2] / "docs" / "security.md").read_text()
    row = next(line for line in doc.splitlines() if "everyone, signed in or not" in line)
    public = [spec.name for spec in COMMANDS if spec.access is Access.PUBLIC]
    assert public and all(f"`{name}" in row for name in public), (public, row)
    assert "Every route but `GET /v1/health` needs" not in doc


async def test_the_web_form_offers_and_sends_a_new_submit_argument(submit_with_a_note) -> None:
    received: list[Command] = []

    class Core:  # in place of the bus: the leaderboards the form lists, and what the form's POST sends the core
        async def request(self, command: Command, timeout_s: float = 5.0) -> Reply:
            if command.kind is CommandKind.SUBMIT:
                received.append(command)
                return Reply(reply_to=command.reply_to, parts=[], data={"submission_id": 7, "runs": []})
            boards = [{"name": "vectoradd", "gpus": ["CPU"]}]
            return Reply(reply_to=command.reply_to, parts=[], data={"leaderboards": boards, "lang": "py"})

    transport = httpx.ASGITransport(app=create_app(Core(), Settings()))
    async with httpx.AsyncClient(transport=transport, base_url="http://api", cookies={COOKIE: "kr_token"}) as http:
        form = (await http.get("/submit?leaderboard=vectoradd")).text
        assert 'name="note"' in form and "a word for the parity test" in form
        csrf = re.search(r'name="csrf" value="(\w+)"', form).group(1)
        for name, value in (("note", "a"), ("remark", "b")):
            fields = {"csrf": csrf, "leaderboard": "vectoradd", "source": "x", "file_name": "k.py", name: value}
            sent = await http.post("/submit", data=fields, files={"file": ("", b"")})
            assert sent.status_code == 303 and sent.headers["location"].startswith("/submissions/7/live?")
    assert [cmd.args["note"] for cmd in received] == ["a", "b"]
    assert received[0].attachment.name == "k.py" and received[0].args["leaderboard"] == "vectoradd"
