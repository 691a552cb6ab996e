"""Discord end to end: raw interactions into the fake Discord, the bot as its own process (`kernelrank discord`),
a real nats-server, the core and a CPU worker running the real harness, and the messages Discord would show."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.contracts.bus import Role
from runners.fake import FakeRunner
from tests.fakes.discord import FakeDiscord, payloads
from tests.fakes.discord import objects as o

REPO = Path(__file__).resolve().parents[2]
SUBMISSIONS = REPO / "tests" / "fixtures" / "harness" / "submissions"
THREADS = "/channels/{channel}/messages/{message}/threads"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(callback_deadline_s=10.0)
    await fake.start()
    yield fake
    await fake.stop()


class Adapter:
    """`kernelrank discord` as a child process, pointed at the fake and at the test's NATS."""

    def __init__(self, fake: FakeDiscord, nats_url: str, home: Path, env: dict[str, str] | None = None) -> None:
        self.fake, self.home = fake, home
        self.env = {
            **os.environ,
            "KERNELRANK_NATS_URL": nats_url,
            "DISCORD_TOKEN": fake.bot_token,
            "KERNELRANK_DISCORD_API_BASE": fake.api_base,
            "KERNELRANK_DISCORD_GUILDS": o.GUILD_ID,
            "KERNELRANK_HOME": str(home),
            "PYTHONPATH": str(REPO),
            **(env or {}),
        }
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0

    async def start(self) -> None:
        self.starts += 1
        log = (self.home / f"discord-{self.starts}.log").open("w")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "core.launch.main",
            "discord",
            cwd=self.home,
            env=self.env,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
        starts = self.starts
        await self.fake.wait_for(lambda f: len(f.calls_to("WS", "IDENTIFY")) >= starts, 60)
        await self.fake.wait_for(lambda f: f.commands.get(o.GUILD_ID), 30)

    async def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()

    async def stop(self) -> None:
        if self.proc and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except TimeoutError:
                self.proc.kill()

    def log(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.home.glob("discord-*.log")))


@pytest.fixture
async def adapter(fake: FakeDiscord, nats_url: str, tmp_path: Path) -> AsyncIterator[Adapter]:
    home = tmp_path / "discord-home"
    home.mkdir()
    running = Adapter(fake, nats_url, home)
    yield running
    await running.stop()


@pytest.fixture
async def adapter_on_bus(fake: FakeDiscord, on_bus, tmp_path: Path) -> AsyncIterator[Adapter]:
    """The bot on the test's bus, logging in as the Discord role where the bus asks for credentials."""
    home = tmp_path / "discord-home"
    home.mkdir()
    running = Adapter(fake, on_bus.nats_url, home, on_bus.credentials_env(Role.DISCORD))
    yield running
    await running.stop()


async def submit(fake: FakeDiscord, file: Path, mode: str = "ranked", **options: str):
    attachment = fake.add_attachment(file.name, file.read_bytes())
    return await fake.inject(
        payloads.slash(
            fake,
            ["leaderboard", "submit", mode],
            {"leaderboard": "vectoradd", **options},
            attachments={"script": attachment},
        )
    )


def status_message(fake: FakeDiscord, submission: int) -> dict | None:
    return next(
        (m for m in fake.channel_messages(o.KERNELS_CHANNEL) if f"submission #{submission} " in m["content"]), None
    )


def thread_reports(fake: FakeDiscord, status: dict) -> list[dict]:
    return [m for m in fake.channel_messages(status["id"]) if m["embeds"]]


@pytest.mark.slow
async def test_correct_and_wrong_kernels_from_discord_through_the_real_harness(
    local_runner, make_system, fake, adapter
):
    await make_system(local_runner)
    await adapter.start()
    await submit(fake, SUBMISSIONS / "correct.py")
    status = await fake.wait_for(lambda f: status_message(f, 1), 60)
    (good,) = await fake.wait_for(lambda f: thread_reports(f, status), 120)
    description = good["embeds"][0]["description"]
    assert "ranked passed" in description and "**Score**" in description and "New #1!" in description
    assert good["content"] == f"<@{payloads.ADA['id']}>"

    await submit(fake, SUBMISSIONS / "wrong_output.py", mode="test")
    status = await fake.wait_for(lambda f: status_message(f, 2), 60)
    (bad,) = await fake.wait_for(lambda f: thread_reports(f, status), 120)
    assert "test failed" in bad["embeds"][0]["description"] and bad["embeds"][0]["color"] == 0xED4245
    await fake.wait_for(lambda f: "❌ CPU: test failed" in f.messages[status["id"]]["content"] or None, 30)

    shown = await fake.inject(
        payloads.slash(fake, ["leaderboard", "show"], {"leaderboard": "vectoradd"}, user=payloads.BOB)
    )
    answer = await fake.wait_for(
        lambda f: next((c for c in f.calls if c.extra.get("interaction") == shown.id and c.method == "PATCH"), None), 30
    )
    assert "Ada" in answer.json["embeds"][0]["description"], adapter.log()


@pytest.mark.slow
async def test_the_bot_killed_mid_run_posts_the_result_exactly_once_after_a_restart(on_bus, fake, adapter_on_bus):
    adapter = adapter_on_bus
    await on_bus.make_system(FakeRunner(delay_s=4))
    await adapter.start()
    interaction = await submit(fake, SUBMISSIONS / "correct.py")
    status = await fake.wait_for(lambda f: status_message(f, 1), 60)
    await fake.wait_for(
        lambda f: any(c.extra.get("interaction") == interaction.id and c.method == "PATCH" for c in f.calls), 30
    )
    await adapter.kill()  # the run goes on; its result waits in the stream
    await asyncio.sleep(5)
    assert not thread_reports(fake, status)
    await adapter.start()
    (report,) = await fake.wait_for(lambda f: thread_reports(f, status), 60)
    assert "ranked passed" in report["embeds"][0]["description"]
    await fake.wait_for(lambda f: "✅ CPU: ranked passed" in f.messages[status["id"]]["content"] or None, 30)
    await asyncio.sleep(2)  # room for a duplicate to show up, if there were one
    assert len(thread_reports(fake, status)) == 1, adapter.log()
    assert len(fake.calls_to("POST", THREADS)) == 1
