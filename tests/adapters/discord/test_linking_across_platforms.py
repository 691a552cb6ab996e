"""One person across Discord and Slack, through both real adapters (discord.py against the fake Discord, the Bolt
app against the fake Slack), a real core, NATS and DuckDB: link, a merged ranking and history, refused codes,
unlink."""

from __future__ import annotations

import asyncio
import json
import re

from discord_testkit import CORRECT, flags, texts

from core.contracts.commands import submit_command
from core.contracts.messages import Actor, Platform, ReplyTo
from runners.fake import FakeRunner
from tests.adapters.slack.slack_kit import fake_workspace, running_slack
from tests.fakes.discord import payloads as discord_payloads
from tests.fakes.slack import payloads as slack_payloads

EPHEMERAL = 1 << 6
ADA_SLACK = "U0ALICE"
CODE = re.compile(r"\b[A-HJ-NP-Z2-9]{8}\b")


async def ranked_names(store, count: int) -> list[str]:
    """The CPU ranking's names once it has ``count`` entries (results arrive through the worker)."""
    for _ in range(300):
        rows = store.ranking("vectoradd", "CPU")
        if len(rows) == count:
            return [row.display_name for row in rows]
        await asyncio.sleep(0.1)
    raise AssertionError(f"the ranking never had {count} entries: {store.ranking('vectoradd', 'CPU')}")


async def test_a_discord_and_a_slack_account_become_one_person_and_split_again(make_system, make_bot):
    system = await make_system(FakeRunner())
    bot = await make_bot(system)
    with fake_workspace() as fake_slack:
        async with running_slack(system.settings.nats_url, fake_slack) as slack:

            async def in_slack(text: str) -> str:
                url = fake_slack.response_url()
                await slack.sender.command(slack_payloads.slash_command(text, response_url=url))
                (answer,) = await fake_slack.wait_for("response_url", url=url)
                assert answer.params.get("response_type", "ephemeral") == "ephemeral"
                return json.dumps(answer.params.get("blocks", []), ensure_ascii=False) + answer.params.get("text", "")

            async def in_discord(path: list[str], options: dict | None = None, user: dict = discord_payloads.ADA):
                asked = await bot.slash(path, options, user=user)
                answer = await bot.answer(asked)
                assert flags(bot.calls(asked)[0]) & EPHEMERAL  # deferred privately: for the asker alone
                return texts(answer)

            await bot.submit(CORRECT, leaderboard="vectoradd")
            assert await ranked_names(system.store, 1) == ["Ada"]  # first known, so the person kept by a link
            await system.bus.request(
                submit_command(
                    Actor(Platform.SLACK, ADA_SLACK, "Ada Lovelace"),
                    ReplyTo(Platform.SLACK, "C0GENERAL"),
                    "k.py",
                    CORRECT,
                    leaderboard="vectoradd",
                ),
                timeout_s=10,
            )
            assert sorted(await ranked_names(system.store, 2)) == ["Ada", "Ada Lovelace"]

            wrong = await in_slack("link ABCDEFGH")
            assert "is not valid" in wrong
            shown = await in_discord(["leaderboard", "link"])
            (code,) = set(CODE.findall(shown))
            assert "/kernelrank link" in shown and "10 minutes" in shown
            linked = await in_slack(f"link {code}")
            assert "One person now" in linked and "Ada (Discord)" in linked and "(Slack)" in linked
            assert await ranked_names(system.store, 1) == ["Ada"]
            mine = await in_slack("mine vectoradd")
            assert mine.count("#1") == 1 and mine.count("#2") == 1  # one history: both submissions

            reused = await in_discord(["leaderboard", "link"], {"code": code}, user=discord_payloads.BOB)
            assert "already used" in reused

            split = await in_slack("unlink")
            assert "2 people again" in split
            assert sorted(await ranked_names(system.store, 2)) == ["Ada", "Ada Lovelace"]
