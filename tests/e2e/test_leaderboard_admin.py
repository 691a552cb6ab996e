"""Leaderboards created live on the real service: the terminal client over HTTP, NATS, the core, DuckDB and a CPU
worker that runs the problem's reference for real, with the core's clock in the test's hands."""

from __future__ import annotations

import asyncio
import contextlib
import io
import shutil
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from api_kit import REPO, kernelrank, serving_api, token_of

from core.contracts.messages import Actor, Attachment, Command, CommandKind, Platform, Reply, ReplyTo

IDENTITY = REPO / "problems" / "identity"
SOLUTION = (IDENTITY / "solutions" / "correct" / "pytorch.py").read_text()


def identity_archive(folder: Path = IDENTITY) -> Attachment:
    """A copy of problems/identity packed as people pack a folder for chat (the utils.py it shares beside it)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        archive.add(folder, arcname="identity")
        archive.add(REPO / "problems" / "utils.py", arcname="utils.py")
    return Attachment("identity.tar.gz", out.getvalue())


def raising_identity(tmp_path: Path) -> Attachment:
    """problems/identity with a reference that raises."""
    folder = tmp_path / "identity"
    shutil.copytree(IDENTITY, folder)
    reference = folder / "reference.py"
    reference.write_text(
        reference.read_text().replace("    return data.clone()", "    raise ValueError('this reference is broken')")
    )
    return identity_archive(folder)


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(second=0, microsecond=0)

    def __call__(self) -> datetime:
        return self.now


async def listed(system, name: str, timeout_s: float = 120) -> dict:
    """The leaderboard once ``list`` shows it (its reference's run takes a worker a few seconds)."""
    async with asyncio.timeout(timeout_s):
        while True:
            boards = (await system.ask("ada", CommandKind.LIST)).data["leaderboards"]
            if found := [b for b in boards if b["name"] == name]:
                return found[0]
            await asyncio.sleep(0.5)


async def answer_to(system, cmd: Command, timeout_s: float = 120) -> Reply:
    """The final answer to ``cmd`` on its chat thread (after the "checking" reply the request got)."""
    async with (
        asyncio.timeout(timeout_s),
        contextlib.aclosing(system.reader.follow_replies(system.route, Platform.DISCORD)) as replies,
    ):
        async for reply in replies:
            if reply.in_reply_to == cmd.id and reply.final:
                return reply
    raise AssertionError("the reply stream ended")


async def closing_news(system, channel: str, timeout_s: float = 120) -> list[Reply]:
    """The announcements in ``channel`` (Discord) once the close is among them."""
    found: list[Reply] = []
    async with (
        asyncio.timeout(timeout_s),
        contextlib.aclosing(system.reader.follow_replies(channel, Platform.DISCORD)) as replies,
    ):
        async for reply in replies:
            found.append(reply)
            if reply.data.get("action") == "close":
                return found
    raise AssertionError("the reply stream ended")


@pytest.mark.slow
async def test_created_from_the_terminal_validated_ranked_then_crowned_at_its_deadline(
    local_runner, make_system, nats_url, tmp_path
):
    clock = Clock()
    system = await make_system(
        local_runner,
        now=clock,
        admins=["discord:boss"],
        announce=["discord:news"],
        scheduler_tick_s=0.2,
        verify_tolerance=1000.0,
    )  # shared CPUs wander past 2x: a passing re-run verifies;
    # the rule itself is tested in tests/core
    deadline = clock.now + timedelta(minutes=1)
    async with serving_api(system.settings, nats_url) as url:
        boss = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": await token_of(system, "boss")}
        ada = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": await token_of(system, "ada")}
        code, out = await kernelrank(
            tmp_path,
            "admin",
            "create",
            "weekly",
            "--problem",
            str(IDENTITY),
            "--deadline",
            f"{deadline:%Y-%m-%d %H:%M}",
            **ada,
        )
        assert code == 1 and "Only admins" in out  # a participant is refused in one sentence
        code, out = await kernelrank(
            tmp_path,
            "admin",
            "create",
            "weekly",
            "--problem",
            str(IDENTITY),
            "--deadline",
            f"{deadline:%Y-%m-%d %H:%M}",
            **boss,
        )
        assert code == 0 and "its reference now runs once in test mode on CPU" in out, out
        assert "weekly is ready" in out and "its reference passed its test run" in out, out  # the client waited
        board = await listed(system, "weekly", timeout_s=5)
        assert board["deadline"].startswith(f"{deadline:%Y-%m-%dT%H:%M}") and board["gpus"] == ["CPU"]

        accepted = await system.submit("ada", SOLUTION, leaderboard="weekly")
        assert accepted.data["ranked"] is True, accepted.parts
        [final] = (await system.finals({run["run_id"] for run in accepted.data["runs"]}, 120)).values()
        assert final.data["status"] == "passed" and "New #1!" in str(final.parts)
        assert "1 min left before weekly closes" in str(final.parts)  # what is left of the week

        clock.now = deadline + timedelta(seconds=1)  # the deadline passes
        news = await closing_news(system, "news")  # the podium re-run on the worker first
        assert [r.data["action"] for r in news if "action" in r.data] == ["close"]  # once
        assert "🥇" in str(news[-1].parts) and "Ada" in str(news[-1].parts) and "verified" in str(news[-1].parts)
        code, out = await kernelrank(tmp_path, "challenge", "weekly", **ada)
        assert code == 0 and "🥇" in out and "Ada" in out and "verified" in out, out
        code, out = await kernelrank(tmp_path, "show", "weekly", **ada)
        assert code == 0 and "1 🥇" in out and "Ada" in out, out
        refused = await system.submit("ada", SOLUTION, leaderboard="weekly")
        assert f"weekly closed on {deadline:%Y-%m-%d %H:%M} UTC" in refused.parts[0].text
        tested = await system.submit("ada", SOLUTION, leaderboard="weekly", mode="test")
        assert "after the deadline: not ranked" in tested.parts[0].text
        [final] = (await system.finals({run["run_id"] for run in tested.data["runs"]}, 120)).values()
        assert final.data["status"] == "passed"


@pytest.mark.slow
async def test_a_reference_that_raises_is_refused_by_its_run_and_nothing_is_created(
    local_runner, make_system, tmp_path
):
    system = await make_system(local_runner, admins=["discord:boss"])
    cmd = Command(
        actor=Actor(Platform.DISCORD, "boss", "Boss"),
        reply_to=ReplyTo(Platform.DISCORD, system.route),
        kind=CommandKind.BOARD_CREATE,
        args={"name": "broken"},
        attachment=raising_identity(tmp_path),
    )
    checking = await system.bus.request(cmd, timeout_s=10)
    assert checking.data.get("state") == "validating", checking.parts[0].text
    refused = await answer_to(system, cmd)
    assert refused.data["state"] == "refused" and "this reference is broken" in str(refused.parts), refused.parts
    assert [b for b in (await system.ask("ada", CommandKind.LIST)).data["leaderboards"] if b["name"] == "broken"] == []
    assert not system.store.leaderboard_name_taken("broken")


@pytest.mark.slow
async def test_a_refusal_of_the_reference_reaches_the_terminal_its_exit_code_and_the_audit_log(
    local_runner, make_system, nats_url, tmp_path
):
    system = await make_system(local_runner, admins=["discord:boss"])
    folder = tmp_path / "broken"
    shutil.copytree(IDENTITY, folder)
    reference = folder / "reference.py"
    reference.write_text(
        reference.read_text().replace("    return data.clone()", "    raise ValueError('this reference is broken')")
    )
    shutil.copy(REPO / "problems" / "utils.py", tmp_path / "utils.py")
    async with serving_api(system.settings, nats_url) as url:
        boss = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": await token_of(system, "boss")}
        code, out = await kernelrank(tmp_path, "admin", "create", "broken", "--problem", str(folder), **boss)
        assert code == 1 and "broken refused" in out and "this reference is broken" in out, out
        code, out = await kernelrank(tmp_path, "admin", "audit", COLUMNS="200", **boss)  # no cell cut to fit
    assert code == 0 and "leaderboard create refused" in out and "leaderboard=broken" in out, out
    assert not system.store.leaderboard_name_taken("broken")


@pytest.mark.slow
async def test_a_lone_first_format_reference_becomes_a_leaderboard_on_a_cpu_install(
    local_runner, make_system, nats_url, tmp_path
):
    system = await make_system(local_runner, admins=["discord:boss"])
    reference = REPO / "tests" / "conformance" / "problems" / "softmax_first_format" / "reference.py"
    async with serving_api(system.settings, nats_url) as url:
        boss = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": await token_of(system, "boss")}
        code, out = await kernelrank(tmp_path, "admin", "create", "softmax", "--problem", str(reference), **boss)
    assert code == 0 and "softmax is ready" in out and "runs on CPU" in out, out  # its reference ran there
