"""The fake Discord itself: run on its own with a payload to replay, and Discord's rules it enforces."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import aiohttp

from adapters.discord.app import run_discord
from core.contracts.config import Settings
from runners.fake import FakeRunner
from tests.fakes.discord import FakeDiscord, payloads
from tests.fakes.discord import objects as o

REPO = Path(__file__).resolve().parents[3]


async def wait_for_line(path: Path, wanted, timeout_s: float = 60.0) -> dict:
    async def poll() -> dict:
        while True:
            if path.exists():
                for line in path.read_text().splitlines():
                    call = json.loads(line)
                    if wanted(call):
                        return call
            await asyncio.sleep(0.1)

    return await asyncio.wait_for(poll(), timeout_s)


async def test_run_on_its_own_it_replays_an_interaction_from_a_file(make_system, tmp_path):
    system = await make_system(FakeRunner())
    payload = payloads.slash(FakeDiscord(), ["leaderboard", "list"])  # shaped as Discord sends it
    (tmp_path / "list.json").write_text(json.dumps(payload))
    record = tmp_path / "calls.jsonl"
    fake = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fakes.discord",
        "--port",
        "0",  # the OS picks a free port; the fake's first line names it
        "--record",
        str(record),
        "--inject",
        str(tmp_path / "list.json"),
        "--deadline",
        "10",
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    first = (await asyncio.wait_for(fake.stdout.readline(), 30)).decode()
    port = re.search(r"KERNELRANK_DISCORD_API_BASE=http://127\.0\.0\.1:(\d+)/api", first)
    assert port, first
    port = int(port.group(1))
    settings = Settings(
        home=tmp_path / "bot",
        nats_url=system.settings.nats_url,
        discord_token="fake-bot-token",
        discord_api_base=f"http://127.0.0.1:{port}/api",
    )
    stop = asyncio.Event()
    bot = asyncio.create_task(run_discord(settings, system.settings.nats_url, stop))
    try:
        answer = await wait_for_line(record, lambda c: c["method"] == "PATCH" and c["route"].startswith("/webhooks"))
        assert "vectoradd" in answer["json"]["embeds"][0]["description"]
        assert answer["path"].endswith("/<token>/messages/@original") and payload["token"] not in record.read_text()
        assert "fake-bot-token" not in record.read_text()
    finally:
        stop.set()
        await bot
        fake.terminate()
        await fake.wait()


async def test_discords_rules_are_enforced(fake_discord):
    fake = fake_discord
    headers = {"Authorization": f"Bot {fake.bot_token}", "Content-Type": "application/json"}
    messages = f"{fake.api_base}/v10/channels/{o.KERNELS_CHANNEL}/messages"
    async with aiohttp.ClientSession(headers=headers) as http:

        async def post(url: str, body: dict, status: int) -> dict:
            async with http.post(url, json=body) as response:
                assert response.status == status, await response.text()
                return await response.json() if response.status != 204 else {}

        assert (await post(messages, {"content": "x" * 2001}, 400))["code"] == 50035
        assert (await post(messages, {"embeds": [{"description": "d" * 4097}]}, 400))["code"] == 50035
        assert (await post(messages, {}, 400))["code"] == 50006
        assert (await post(f"{fake.api_base}/v10/channels/42/messages", {"content": "x"}, 404))["code"] == 10003
        first = await post(messages, {"content": "once", "nonce": "n1", "enforce_nonce": True}, 200)
        again = await post(messages, {"content": "once", "nonce": "n1", "enforce_nonce": True}, 200)
        assert first["id"] == again["id"] and len(fake.channel_messages(o.KERNELS_CHANNEL)) == 1
        threads = f"{messages}/{first['id']}/threads"
        assert (await post(threads, {"name": "t"}, 201))["id"] == first["id"]
        assert (await post(threads, {"name": "t"}, 400))["code"] == 160004
        async with http.get(f"{fake.api_base}/v10/users/@me", headers={"Authorization": "Bot wrong"}) as response:
            assert response.status == 401

    late = fake.expect(payloads.slash(fake, ["leaderboard", "list"]), age_s=fake.callback_deadline_s + 1)
    expired = fake.expect(payloads.slash(fake, ["leaderboard", "list"]), age_s=fake.token_ttl_s + 1)
    async with aiohttp.ClientSession() as http:
        url = f"{fake.api_base}/v10/interactions/{late.id}/{late.token}/callback?with_response=1"
        async with http.post(url, json={"type": 5}) as response:  # past the deadline: Discord forgets it
            assert response.status == 404 and (await response.json())["code"] == 10062
        url = f"{fake.api_base}/v10/webhooks/{o.APPLICATION_ID}/{expired.token}/messages/@original"
        async with http.patch(url, json={"content": "late"}) as response:
            assert response.status == 401 and (await response.json())["code"] == 50027
