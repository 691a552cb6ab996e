"""A week's challenge on the real service: created from chat, ranked, closed by the scheduler, the podium re-run on
the CPU worker and the winner announced; and a core killed across the close that announces once when it is back."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_leaderboard_admin import SOLUTION, Clock, identity_archive, listed

from core.contracts.bus import Bus, CoreUnavailable
from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, Command, CommandKind, Platform, Reply, ReplyTo, Tone
from runners.fake import FakeRunner
from runners.worker import Worker
from storage.store import Store

REPO = Path(__file__).resolve().parents[2]
NEWS = "news"


async def announcements(bus: Bus, idle_s: float) -> list[Reply]:
    """Every announcement stored for the news channel, until none arrives for ``idle_s``."""
    found = []
    async with contextlib.aclosing(bus.follow_replies(NEWS, Platform.DISCORD)) as replies:
        with contextlib.suppress(TimeoutError):
            while True:
                found.append(await asyncio.wait_for(anext(replies), idle_s))
    return found


async def until_closed(bus: Bus, timeout_s: float = 120) -> list[Reply]:
    async with asyncio.timeout(timeout_s):
        while True:
            found = await announcements(bus, 1.0)
            if any(r.data.get("action") == "close" for r in found):
                return found


@pytest.mark.slow
async def test_a_challenge_closes_verifies_the_podium_on_the_worker_and_crowns_the_winner(local_runner, make_system):
    clock = Clock()
    system = await make_system(
        local_runner, now=clock, admins=["discord:boss"], scheduler_tick_s=0.2, verify_tolerance=1000.0
    )  # shared CPUs wander past 2x: a passing re-run verifies;
    # the rule itself is tested in tests/core
    boss, where = Actor(Platform.DISCORD, "boss", "Boss"), ReplyTo(Platform.DISCORD, system.route)
    created = await system.bus.request(
        Command(boss, where, CommandKind.BOARD_CREATE, {"name": "weekly"}, identity_archive()), timeout_s=10
    )
    assert created.data.get("state") == "validating", created.parts
    await listed(system, "weekly")
    closes = clock.now + timedelta(minutes=1)
    scheduled = await system.bus.request(
        Command(
            boss,
            where,
            CommandKind.CHALLENGE_CREATE,
            {
                "title": "Week 48",
                "leaderboards": "weekly",
                "closes": f"{closes:%Y-%m-%d %H:%M}",
                "announce": f"discord:{NEWS},slack:C1",
            },
        ),
        timeout_s=10,
    )
    assert scheduled.data == {"challenge": "Week 48"}, scheduled.parts

    accepted = await system.submit("ada", SOLUTION, leaderboard="weekly")
    [final] = (await system.finals({run["run_id"] for run in accepted.data["runs"]}, 120)).values()
    assert final.data["status"] == "passed"

    clock.now = closes + timedelta(seconds=1)
    news = await until_closed(system.reader)
    assert [r.data["action"] for r in news] == ["open", "close"]  # once each, in the channel
    assert "🥇" in str(news[-1].parts) and "Ada" in str(news[-1].parts) and "verified" in str(news[-1].parts)
    results = (await system.ask("ada", CommandKind.CHALLENGE, title="Week 48")).data["results"]
    [podium] = [b["podium"] for b in results["boards"]]
    assert [(e["name"], e["verdict"]) for e in podium] == [("Ada", "verified")]
    assert "1 🥇" in str((await system.ask("ada", CommandKind.SHOW, leaderboard="weekly")).parts)
    refused = await system.submit("ada", SOLUTION, leaderboard="weekly")
    assert f"closed on {closes:%Y-%m-%d %H:%M} UTC" in refused.parts[0].text
    tested = await system.submit("ada", SOLUTION, leaderboard="weekly", mode="test")
    assert "after the deadline: not ranked" in tested.parts[0].text
    [final] = (await system.finals({run["run_id"] for run in tested.data["runs"]}, 120)).values()
    assert final.data["status"] == "passed"

    # Reopened by a new challenge: a new round, ranked and crowned without Ada's crowned entry (issue 27, item 6).
    again = closes + timedelta(minutes=2)
    reopened = await system.bus.request(
        Command(
            boss,
            where,
            CommandKind.CHALLENGE_CREATE,
            {"title": "Week 49", "leaderboards": "weekly", "closes": f"{again:%Y-%m-%d %H:%M}"},
        ),
        timeout_s=10,
    )
    assert reopened.data == {"challenge": "Week 49"}, reopened.parts
    accepted = await system.submit("bob", SOLUTION, leaderboard="weekly")
    [final] = (await system.finals({run["run_id"] for run in accepted.data["runs"]}, 120)).values()
    assert final.data["status"] == "passed"
    assert await ranked_names(system) == ["Bob"]
    assert await ranked_names(system, round="1") == ["Ada"]
    assert sorted(await ranked_names(system, round="all")) == ["Ada", "Bob"]
    clock.now = again + timedelta(seconds=1)
    async with asyncio.timeout(120):
        while "results" not in (shown := await system.ask("ada", CommandKind.CHALLENGE, title="Week 49")).data:
            await asyncio.sleep(0.2)
    [board] = shown.data["results"]["boards"]
    assert [e["name"] for e in board["podium"]] == ["Bob"] and [e["name"] for e in board["frozen"]] == ["Bob"]


async def ranked_names(system, **args) -> list[str]:
    shown = await system.ask("ada", CommandKind.SHOW, leaderboard="weekly", **args)
    return [row["name"] for row in shown.data["rankings"]["CPU"]]


def start_core(url: str, tmp_path: Path, problems: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "KERNELRANK_NATS_URL": url,
        "KERNELRANK_HOME": str(tmp_path / "var"),
        "KERNELRANK_PROBLEMS_DIR": str(problems),
        "KERNELRANK_GPUS": "CPU",
        "PYTHONPATH": str(REPO),
        "KERNELRANK_ADMINS": "discord:boss",
        "KERNELRANK_SCHEDULER_TICK_S": "0.2",
    }
    return subprocess.Popen([sys.executable, "-m", "core.launch.main", "core"], cwd=tmp_path, env=env)


async def answered(bus: Bus, cmd: Command) -> Reply:
    for _ in range(300):
        with contextlib.suppress(CoreUnavailable):
            return await bus.request(cmd, timeout_s=1)
        await asyncio.sleep(0.1)
    raise AssertionError("the core did not start")


def a_challenge(boss: Actor, closes: datetime) -> tuple[Command, str]:
    """An admin's challenge around vectoradd, announced in the news channel; its title."""
    return Command(
        boss,
        ReplyTo(Platform.DISCORD, "crash"),
        CommandKind.CHALLENGE_CREATE,
        {
            "title": "Sprint",
            "leaderboards": "vectoradd",
            "closes": closes.isoformat(timespec="seconds"),
            "announce": f"discord:{NEWS}",
        },
    ), "Sprint"


def a_deadline(boss: Actor, closes: datetime) -> tuple[Command, str]:
    """vectoradd given a deadline alone, from the news channel (where its close is announced); its challenge's title."""
    return Command(
        boss,
        ReplyTo(Platform.DISCORD, NEWS),
        CommandKind.BOARD_UPDATE,
        {"leaderboard": "vectoradd", "deadline": closes.isoformat(timespec="seconds")},
    ), "vectoradd"


@pytest.mark.slow
@pytest.mark.parametrize("schedule", [a_challenge, a_deadline])
async def test_a_core_killed_across_the_close_announces_the_winners_once(nats_url, tmp_path, problems, schedule):
    bus = await Bus.connect(nats_url, name="challenge-crash")
    boss, where = Actor(Platform.DISCORD, "boss", "Boss"), ReplyTo(Platform.DISCORD, "crash")
    core, stop = start_core(nats_url, tmp_path, problems), asyncio.Event()
    worker = asyncio.create_task(Worker(bus, "CPU", FakeRunner(), concurrency=2, poll_s=0.2).run(stop))
    try:
        await answered(bus, query_command(boss, where, CommandKind.LIST))
        kernel = (REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py").read_bytes()
        await bus.request(
            submit_command(Actor(Platform.DISCORD, "ada", "Ada"), where, "k.py", kernel, leaderboard="vectoradd"),
            timeout_s=10,
        )
        closes = datetime.now(UTC) + timedelta(seconds=4)
        command, title = schedule(boss, closes)
        scheduled = await bus.request(command, timeout_s=10)
        assert scheduled.tone is not Tone.ERROR, scheduled.parts
        core.send_signal(signal.SIGKILL)  # down at the close
        core.wait()
        await asyncio.sleep(max(0.0, (closes - datetime.now(UTC)).total_seconds()) + 1)
        core = start_core(nats_url, tmp_path, problems)
        await until_closed(bus)
        news = await announcements(bus, 3.0)  # all of them, read again: a repeat would be here
        closes_announced = [r for r in news if r.data.get("action") == "close"]
        assert len(closes_announced) == 1 and "🥇" in str(closes_announced[0].parts)
        assert len([r for r in news if r.data.get("action") == "open"]) <= 1
    finally:
        stop.set()
        await worker
        core.send_signal(signal.SIGTERM)
        core.wait(30)
        await bus.close()
    with Store(tmp_path / "var" / "kernelrank.duckdb") as store:
        assert store.challenges.get(title).done >= {"close"}
