"""`kernelrank discord` as people start it: clear refusals, and global registration as an explicit step."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from tests.fakes.discord import FakeDiscord

REPO = Path(__file__).resolve().parents[3]


async def kernelrank(cwd: Path, *args: str, **env: str) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("KERNELRANK_", "DISCORD_"))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "core.launch.main",
        *args,
        cwd=cwd,
        env={**clean, "PYTHONPATH": str(REPO), **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode, out.decode()


@pytest.mark.slow
async def test_without_a_token_it_says_where_to_get_one(tmp_path, nats_url):
    code, out = await kernelrank(tmp_path, "discord", KERNELRANK_NATS_URL=nats_url)
    assert code == 1 and "DISCORD_TOKEN is not set" in out and "Developer Portal" in out


async def test_a_refused_token_is_named_and_never_printed(tmp_path, nats_url, fake_discord: FakeDiscord):
    code, out = await kernelrank(
        tmp_path,
        "discord",
        KERNELRANK_NATS_URL=nats_url,
        DISCORD_TOKEN="not-the-token",
        KERNELRANK_DISCORD_API_BASE=fake_discord.api_base,
    )
    assert code == 1 and "Discord refused DISCORD_TOKEN" in out and "not-the-token" not in out


@pytest.mark.slow
async def test_sync_global_registers_every_command_then_exits(tmp_path, fake_discord: FakeDiscord):
    code, out = await kernelrank(
        tmp_path,
        "discord",
        "--sync-global",
        DISCORD_TOKEN=fake_discord.bot_token,
        KERNELRANK_DISCORD_API_BASE=fake_discord.api_base,
    )
    assert code == 0 and "Registered 2 commands globally" in out, out
    assert {c["name"] for c in fake_discord.commands["global"]} == {"leaderboard", "admin"}
    assert not fake_discord.calls_to("WS", "IDENTIFY")  # no gateway session for a registration


@pytest.mark.slow
async def test_a_bad_announcement_channel_stops_the_core_with_the_setting_named(tmp_path, nats_url):
    code, out = await kernelrank(
        tmp_path,
        "core",
        KERNELRANK_NATS_URL=nats_url,
        KERNELRANK_ANNOUNCE="discord",
        KERNELRANK_HOME=str(tmp_path / "var"),
        KERNELRANK_PROBLEMS_DIR=str(tmp_path),
    )
    assert code == 2 and "KERNELRANK_ANNOUNCE entry 'discord'" in out


async def test_no_nats_is_one_clear_sentence(tmp_path):
    code, out = await kernelrank(tmp_path, "discord", KERNELRANK_NATS_URL="nats://127.0.0.1:1", DISCORD_TOKEN="t")
    assert code == 1 and "cannot reach NATS at nats://127.0.0.1:1" in out and "Traceback" not in out
