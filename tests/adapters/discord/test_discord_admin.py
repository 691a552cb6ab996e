"""Leaderboards managed from Discord: the real discord.py bot against the fake Discord and a real core whose CPU
worker runs the problem's reference. ``/admin create`` takes the problem as an attachment; a participant is refused
in one sentence; update, close and delete (with its confirmation) follow."""

from __future__ import annotations

import pytest
from discord_testkit import flags, texts

from tests.core.test_manage import cpu_only_identity, identity_archive
from tests.fakes.discord import payloads

EPHEMERAL = 1 << 6
ADMIN = ["admin"]


@pytest.mark.slow
async def test_admin_create_update_close_delete_from_discord_with_permission_checks(
    local_runner, make_system, make_bot
):
    system = await make_system(local_runner, admins=[f"discord:{payloads.ADA['id']}"])
    bot = await make_bot(system)
    fake = bot.fake
    problem = identity_archive()
    upload = fake.add_attachment(problem.name, problem.content)
    refused = await bot.answer(
        await bot.slash(ADMIN + ["create"], {"name": "weekly"}, user=payloads.BOB, attachments={"problem": upload})
    )
    assert "Only admins and leaderboard creators can use `admin create`" in texts(refused)
    assert not fake.calls_to("GET", "/attachments/{channel}/{attachment}/{filename}")[1:]  # at most one download

    upload = fake.add_attachment(problem.name, problem.content)
    checking = await bot.answer(
        await bot.slash(
            ADMIN + ["create"],
            {"name": "weekly", "gpu": "CPU", "deadline": "2099-01-01 12:00"},
            attachments={"problem": upload},
        )
    )
    assert "its reference now runs once in test mode on CPU" in texts(checking)
    ready = await fake.wait_for(
        lambda f: next(
            (c for c in f.calls if isinstance(c.json, dict) and "(version 1) was created" in texts(c)), None
        ),
        120,
    )
    assert "until <t:4070952000:f>" in texts(ready)  # 2099-01-01 12:00 UTC, in each reader's zone
    listed = await bot.answer(await bot.slash(["leaderboard", "list"]))
    assert "weekly" in texts(listed)

    updated = await bot.answer(
        await bot.slash(ADMIN + ["update"], {"leaderboard": "weekly", "deadline": "2099-02-01 12:00"})
    )
    assert "until <t:4073630400:f>" in texts(updated)
    not_yours = await bot.answer(await bot.slash(ADMIN + ["close"], {"leaderboard": "weekly"}, user=payloads.BOB))
    assert flags(not_yours) & EPHEMERAL and "Only admins and leaderboard creators" in texts(not_yours)
    closed = await bot.answer(await bot.slash(ADMIN + ["close"], {"leaderboard": "weekly"}))
    assert "ranked submissions are refused from now on" in texts(closed)
    asked = await bot.answer(await bot.slash(ADMIN + ["delete"], {"leaderboard": "weekly"}))
    assert "--confirm weekly" in texts(asked)
    deleted = await bot.answer(await bot.slash(ADMIN + ["delete"], {"leaderboard": "weekly", "confirm": "weekly"}))
    assert "it is hidden, and its history is kept" in texts(deleted)
    gone = await bot.answer(await bot.slash(["leaderboard", "show"], {"leaderboard": "weekly"}))
    assert "There is no leaderboard 'weekly'" in texts(gone)


@pytest.mark.slow
async def test_admin_create_with_no_gpu_named_runs_on_the_pools_its_problem_can_use_without_a_menu(
    local_runner, make_system, make_bot, tmp_path
):
    system = await make_system(local_runner, pools=["CPU", "H100"], admins=[f"discord:{payloads.ADA['id']}"])
    bot = await make_bot(system)
    fake = bot.fake
    problem = cpu_only_identity(tmp_path)
    upload = fake.add_attachment(problem.name, problem.content)
    interaction = await bot.slash(ADMIN + ["create"], {"name": "weekly"}, attachments={"problem": upload})
    checking = await bot.answer(interaction, timeout_s=60)  # no menu of pools first: H100 is no use to it
    assert "its reference now runs once in test mode on CPU" in texts(checking)
    assert not [c for c in bot.calls(interaction) if isinstance(c.json, dict) and c.json.get("components")]
    await fake.wait_for(
        lambda f: next(
            (c for c in f.calls if isinstance(c.json, dict) and "runs on CPU with no deadline" in texts(c)), None
        ),
        120,
    )


@pytest.mark.slow
async def test_a_person_option_also_takes_a_typed_name_so_admin_limit_reaches_a_leaderboard(
    local_runner, make_system, make_bot
):
    system = await make_system(local_runner, admins=[f"discord:{payloads.ADA['id']}"])
    bot = await make_bot(system)
    board = await bot.answer(await bot.slash(ADMIN + ["limit"], {"person_typed": "vectoradd", "rate": "2/min"}))
    assert "vectoradd takes 2 submissions a minute per GPU, everyone's together" in texts(board)
    person = await bot.answer(await bot.slash(ADMIN + ["limit"], {"person_typed": "slack:U777", "rate": "3/min"}))
    assert "knows nobody as 'slack:U777'" in texts(person)  # the typed account reached the core as written
