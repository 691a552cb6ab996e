"""Fixtures for the Discord adapter: the fake Discord, and the real bot connected to it and to a real core."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from discord_testkit import BotUnderTest, start_bot

from tests.e2e.conftest import make_system, problems  # noqa: F401  (a real core, NATS and worker)
from tests.fakes.discord import FakeDiscord


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(callback_deadline_s=10.0)  # Discord's 3 s, relaxed for a loaded 2-core test machine
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def make_bot(fake_discord: FakeDiscord) -> AsyncIterator[Callable]:
    started: list[BotUnderTest] = []

    async def start(system, **overrides) -> BotUnderTest:
        bot = await start_bot(fake_discord, system, **overrides)
        started.append(bot)
        return bot

    yield start
    for bot in started:
        bot.stop.set()
        await bot.task
