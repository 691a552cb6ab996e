"""``/leaderboard report`` and ``/admin review`` through the real discord.py bot, the fake Discord and a real core:
the report is answered privately, a participant cannot read the review, and an admin decides from Discord."""

from __future__ import annotations

from discord_testkit import CORRECT, flags, texts

from runners.fake import FakeRunner
from tests.fakes.discord import payloads

EPHEMERAL = 1 << 6


async def test_a_report_from_discord_waits_in_admin_review_until_an_admin_decides(make_system, make_bot):
    system = await make_system(FakeRunner(), admins=[f"discord:{payloads.ADA['id']}"])
    bot = await make_bot(system)
    await bot.answer(await bot.submit(CORRECT, leaderboard="vectoradd", user=payloads.BOB))
    await bot.fake.wait_for(lambda f: system.store.ranking("vectoradd", "CPU"), 60)
    submission = 1  # the first of a fresh kernelrank

    reporting = await bot.slash(
        ["leaderboard", "report"], {"id": submission, "reason": "reads the answer from a file"}, user=payloads.ADA
    )
    assert "not told who reported" in texts(await bot.answer(reporting))
    assert flags(bot.calls(reporting)[0]) & EPHEMERAL  # deferred privately: the channel does not see who reported
    refused = await bot.answer(await bot.slash(["admin", "review"], {}, user=payloads.BOB))
    assert "Only admins can use `admin review`" in texts(refused)

    listed = texts(await bot.answer(await bot.slash(["admin", "review"], {})))
    assert f"#{submission}" in listed and "reads the answer from a file" in listed
    decided = await bot.answer(
        await bot.slash(["admin", "review"], {"id": submission, "decide": "cheat", "note": "reads a file"})
    )
    assert f"#{submission} is invalidated" in texts(decided)
    assert system.store.ranking("vectoradd", "CPU") == []
