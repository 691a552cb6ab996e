"""Rate limits per person and GPU: counted from the stored submissions, so a restarted core still enforces them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.contracts.bus import Bus
from core.contracts.commands import submit_command
from core.contracts.config import Settings
from core.contracts.errors import RateLimited
from core.contracts.messages import Actor, Platform, Reply, ReplyTo, Tone
from core.service.bootstrap import bootstrap
from core.service.db import Database
from core.service.loop import CoreService
from core.service.ratelimit import RateLimiter
from runners.fake import FakeRunner
from storage.store import Store

CORRECT = (Path(__file__).parent.parent / "fixtures" / "harness" / "submissions" / "correct.py").read_text()
T0 = datetime(2030, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


async def nothing_stored(since: datetime) -> list:
    return []


async def test_the_window_slides_per_person_and_gpu():
    limiter = RateLimiter(per_minute=2)
    await limiter.check(1, ["H100"], at(0), nothing_stored)
    await limiter.check(1, ["H100", "A100"], at(10), nothing_stored)
    with pytest.raises(RateLimited) as refused:
        await limiter.check(1, ["A100", "H100"], at(30), nothing_stored)
    assert refused.value.retry_after_s == 30 and "submissions to H100" in str(refused.value)
    await limiter.check(1, ["A100"], at(31), nothing_stored)  # a refusal counted nothing on A100
    await limiter.check(2, ["H100"], at(31), nothing_stored)  # another person has a window of their own
    await limiter.check(1, ["H100"], at(60.5), nothing_stored)  # the first one has left the window


async def test_a_leaderboards_own_limit_counts_everyone_together_per_gpu():
    limiter = RateLimiter(per_minute=10)
    limiter.boards = {"weekly": 2}
    await limiter.check(1, ["H100"], at(0), nothing_stored, leaderboard="weekly")
    await limiter.check(2, ["H100"], at(10), nothing_stored, leaderboard="Weekly")
    with pytest.raises(RateLimited) as refused:
        await limiter.check(3, ["H100"], at(20), nothing_stored, leaderboard="weekly")
    assert refused.value.retry_after_s == 40 and "weekly has had 2 submissions to H100" in str(refused.value)
    await limiter.check(3, ["A100"], at(20), nothing_stored, leaderboard="weekly")  # another GPU: its own window
    await limiter.check(3, ["H100"], at(20), nothing_stored, leaderboard="other")  # another leaderboard: no limit
    limiter.uncount(2, ["H100"], at(10), leaderboard="weekly")  # a repeat, taken back
    await limiter.check(3, ["H100"], at(21), nothing_stored, leaderboard="weekly")


async def test_what_was_stored_before_counts_and_is_read_once():
    reads: list[datetime] = []

    async def stored(since: datetime) -> list[tuple[int, str, str, datetime]]:
        reads.append(since)
        return [(1, "add", "H100", at(-50)), (1, "add", "H100", at(-20)), (7, "add", "H100", at(-20))]

    limiter = RateLimiter(per_minute=2)
    await asyncio.gather(limiter.check(8, ["H100"], at(0), stored), limiter.check(9, ["H100"], at(0), stored))
    with pytest.raises(RateLimited) as refused:
        await limiter.check(1, ["H100"], at(0), stored)
    assert refused.value.retry_after_s == 10
    await limiter.check(1, ["H100"], at(11), stored)
    assert reads == [at(-60)]


async def core(nats_url: str, settings: Settings) -> tuple[CoreService, Database, Bus]:
    bus = await Bus.connect(nats_url, name="core")
    db = Database(Store(settings.database))
    service = bootstrap(bus, db, settings, ["CPU"])
    await service.start()
    return service, db, bus


async def stop(service: CoreService, db: Database, bus: Bus) -> None:
    await service.stop()
    await db.close()
    await bus.close()


async def submit(client: Bus, user: str) -> Reply:
    cmd = submit_command(
        Actor(Platform.DISCORD, user, user.title()),
        ReplyTo(Platform.DISCORD, "limits"),
        "k.py",
        CORRECT.encode(),
        leaderboard="vectoradd",
    )
    return await client.request(cmd, timeout_s=10)


async def test_a_restarted_core_still_holds_the_limit(nats_url, tmp_path, problems):
    settings = Settings(home=tmp_path / "var", problems_dir=problems, nats_url=nats_url, rate_limit_per_minute=2)
    client = await Bus.connect(nats_url, name="client")
    running = await core(nats_url, settings)
    try:
        for _ in range(2):
            assert (await submit(client, "ada")).tone is not Tone.ERROR
        await stop(*running)
        running = await core(nats_url, settings)  # a fresh core: nothing in memory
        refused = await submit(client, "ada")
        assert refused.tone is Tone.ERROR and refused.data["error"] == "rate_limited"
        assert "in the last minute; try again in" in refused.parts[0].text
        assert 1 <= refused.data["retry_after_s"] <= 60
        assert (await submit(client, "bob")).tone is not Tone.ERROR
    finally:
        await stop(*running)
        await client.close()
    with Store(settings.database) as store:
        assert store.stats().submissions == 3


async def test_a_repeated_command_counts_once(make_system):
    system = await make_system(FakeRunner(), rate_limit=2)
    cmd = submit_command(
        system.actor("ada"), ReplyTo(Platform.DISCORD, system.route), "k.py", CORRECT.encode(), leaderboard="vectoradd"
    )
    for _ in range(3):  # a chat platform retrying one event
        assert (await system.bus.request(cmd, timeout_s=10)).tone is not Tone.ERROR
    assert (await system.submit("ada", CORRECT, leaderboard="vectoradd")).tone is not Tone.ERROR
    assert (await system.submit("ada", CORRECT, leaderboard="vectoradd")).data["error"] == "rate_limited"
