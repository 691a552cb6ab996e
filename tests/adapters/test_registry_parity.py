"""Every command of the registry exists in every front end, with its arguments and its aliases, or its entry
says why not: the terminal client, the API, Discord (the real discord.py command tree) and Slack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from discord import app_commands

from adapters.api.app import create_app
from adapters.cli import parser_for, pick_route
from adapters.discord.app import KernelrankBot
from adapters.slack.grammar import SUBCOMMANDS, parse
from core.contracts.config import Settings
from core.contracts.messages import CommandKind
from core.contracts.registry import BY_KIND, COMMANDS, FRONT_ENDS, ArgKind, Spec, find

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
        for leaf in leaves:
            options = {p.name for p in leaf.parameters}
            for arg in spec.args:
                typed_elsewhere = spec.submission and arg.name == "mode"  # /leaderboard submit ranked
                assert typed_elsewhere or {arg.name, *arg.aliases} & options, (leaf.qualified_name, arg.name)


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
