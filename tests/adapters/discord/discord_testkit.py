"""The Discord bot under test: the real discord.py client against the fake Discord, and a real core behind it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.discord.app import run_discord
from core.contracts.config import Settings
from tests.fakes.discord import FakeDiscord, Interaction, payloads
from tests.fakes.discord import objects as o
from tests.fakes.discord.server import Call

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "harness"
CORRECT = (FIXTURES / "submissions" / "correct.py").read_bytes()
WRONG = (FIXTURES / "submissions" / "wrong_output.py").read_bytes()
SUBMIT_RANKED = ["leaderboard", "submit", "ranked"]


@dataclass
class BotUnderTest:
    fake: FakeDiscord
    system: Any  # tests.e2e.conftest.System
    settings: Settings
    task: asyncio.Task
    stop: asyncio.Event

    async def send(self, payload: dict[str, Any]) -> Interaction:
        return await self.fake.inject(payload)

    async def slash(self, path: list[str], options: dict[str, Any] | None = None, **kwargs: Any) -> Interaction:
        return await self.send(payloads.slash(self.fake, path, options, **kwargs))

    async def submit(
        self,
        content: bytes,
        filename: str = "k.py",
        path: list[str] = SUBMIT_RANKED,
        user: dict[str, Any] | None = None,
        **options: Any,
    ) -> Interaction:
        attachment = self.fake.add_attachment(filename, content)
        sender = {"user": user} if user else {}  # the default sender is Ada
        return await self.slash(path, options, attachments={"script": attachment}, **sender)

    def calls(self, interaction: Interaction) -> list[Call]:
        return [c for c in self.fake.calls if c.extra.get("interaction") == interaction.id]

    async def answer(self, interaction: Interaction, timeout_s: float = 30.0) -> Call:
        """The call that shows the interaction's answer: the edit of its deferred message, or a private followup."""

        def shown(fake: FakeDiscord) -> Call | None:
            return next(
                (
                    c
                    for c in self.calls(interaction)
                    if c.method in ("PATCH", "POST")
                    and c.route.startswith("/webhooks/")
                    and c.status == 200
                    and _final(c)
                ),
                None,
            )

        return await self.fake.wait_for(shown, timeout_s)


def _final(call: Call) -> bool:
    """Not the GPU question (a select menu), which is an edit too."""
    return not any(
        item.get("type") == 3 for row in (call.json or {}).get("components") or [] for item in row.get("components", [])
    )


async def start_bot(fake: FakeDiscord, system: Any, **overrides: Any) -> BotUnderTest:
    settings = Settings(
        home=system.settings.home,
        nats_url=system.settings.nats_url,
        discord_token=fake.bot_token,
        discord_api_base=fake.api_base,
        discord_guilds=[o.GUILD_ID],
        request_timeout_s=10,
        **overrides,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(run_discord(settings, system.settings.nats_url, stop))
    await fake.wait_identified(30)
    await fake.wait_for(lambda f: f.commands.get(o.GUILD_ID), 30)
    return BotUnderTest(fake, system, settings, task, stop)


def texts(call: Call) -> str:
    """Everything a person reads in a message call: content, embed titles, descriptions and footers."""
    body = call.json or {}
    data = body.get("data", body)  # interaction callbacks wrap the message in "data"
    words = [data.get("content") or ""]
    for embed in data.get("embeds") or []:
        words += [embed.get("title") or "", embed.get("description") or "", (embed.get("footer") or {}).get("text", "")]
    return "\n".join(w for w in words if w)


def flags(call: Call) -> int:
    body = call.json or {}
    return int((body.get("data", body) or {}).get("flags") or 0)
