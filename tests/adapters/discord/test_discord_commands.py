"""The real discord.py bot against the fake Discord and a real core: what each command sends, in what order."""

from __future__ import annotations

import asyncio
import io
import zipfile
from datetime import UTC, datetime

import nats
import pytest
from discord_testkit import CORRECT, SUBMIT_RANKED, flags, texts

from core.contracts import subjects
from core.contracts.commands import MODES
from core.contracts.messages import Command, CommandKind, Platform, decode
from core.contracts.tokenformat import token_sha256
from runners.fake import FakeRunner
from tests.fakes.discord import objects as o
from tests.fakes.discord import payloads

EPHEMERAL = 1 << 6


async def test_start_logs_in_registers_commands_and_identifies_with_the_guilds_intent_only(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    fake = bot.fake
    order = [(c.method, c.route) for c in fake.calls[:5]]
    assert order[:2] == [("GET", "/users/@me"), ("GET", "/oauth2/applications/@me")]
    assert ("PUT", "/applications/{application}/guilds/{guild}/commands") in order
    identify = next(c for c in fake.calls if c.route == "IDENTIFY")
    assert identify.json["intents"] == 1  # GUILDS: no privileged intent
    assert all(c.extra.get("auth") == "bot" for c in fake.calls if c.route.startswith(("/users", "/applications")))
    assert not fake.commands.get("global")  # global registration is an explicit step

    (leaderboard,) = [c for c in fake.commands[o.GUILD_ID] if c["name"] == "leaderboard"]
    subcommands = {opt["name"]: opt for opt in leaderboard["options"]}
    assert {
        "submit",
        "list",
        "show",
        "show-personal",
        "mine",
        "history",
        "task",
        "reference-code",
        "template",
        "eval-code",
        "submission",
        "queue",
        "help",
        "token",
    } <= set(subcommands)
    submit = {opt["name"]: opt for opt in subcommands["submit"]["options"]}
    assert {name: opt["description"] for name, opt in submit.items()} == dict(MODES)  # the one table of modes
    assert subcommands["submit"]["type"] == 2
    assert [
        (opt["name"], opt["type"], opt.get("required", False), opt.get("autocomplete", False))
        for opt in submit["ranked"]["options"]
    ] == [
        ("script", 11, True, False),
        ("leaderboard", 3, False, True),
        ("gpu", 3, False, True),
        ("leaderboard_name", 3, False, True),
    ]
    (admin,) = [c for c in fake.commands[o.GUILD_ID] if c["name"] == "admin"]
    # shown to every member: the core decides, and a Leaderboard Admin without Manage Server must see it
    assert admin.get("default_member_permissions") is None and admin["dm_permission"] is False


async def test_list_is_deferred_at_once_then_answered_in_place(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    interaction = await bot.slash(["leaderboard", "list"])
    answer = await bot.answer(interaction)
    calls = bot.calls(interaction)
    assert (calls[0].route, calls[0].json) == ("/interactions/{interaction}/{token}/callback", {"type": 5})
    assert calls[0].query == {"with_response": "1"}
    assert answer.method == "PATCH" and answer.path.endswith("/messages/@original") and "<token>" in answer.path
    assert "vectoradd" in texts(answer) and "CPU" in texts(answer)
    assert len(answer.json["embeds"]) == 1 and answer.json["embeds"][0]["description"].startswith("```")


async def test_autocomplete_offers_leaderboards_and_the_gpus_of_the_one_typed(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner(), pools=["CPU", "H100"]))
    names = await bot.send(
        payloads.autocomplete(bot.fake, ["leaderboard", "show"], {"leaderboard": "vec"}, focused="leaderboard")
    )
    gpus = await bot.send(
        payloads.autocomplete(bot.fake, SUBMIT_RANKED, {"leaderboard": "vectoradd", "gpu": "h"}, focused="gpu")
    )
    for interaction, expected in ((names, ["vectoradd"]), (gpus, ["H100"])):
        (call,) = await bot.fake.wait_for(lambda f, i=interaction: bot.calls(i))
        assert call.json["type"] == 8
        assert [c["value"] for c in call.json["data"]["choices"]] == expected


async def test_errors_are_private_and_one_sentence_even_after_a_public_defer(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    interaction = await bot.slash(["leaderboard", "show"], {"leaderboard": "nope"})
    answer = await bot.answer(interaction)
    calls = [(c.method, c.route.rsplit("/", 1)[-1]) for c in bot.calls(interaction)]
    assert calls == [("POST", "callback"), ("DELETE", "{message}"), ("POST", "{token}")]
    assert flags(answer) & EPHEMERAL
    assert "There is no leaderboard 'nope'" in texts(answer) and texts(answer).count(".") <= 3


async def test_queries_that_concern_the_asker_are_private(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    for path, options in (
        (["leaderboard", "queue"], {}),
        (["leaderboard", "mine"], {"leaderboard": "vectoradd"}),
        (["leaderboard", "show-personal"], {"leaderboard": "vectoradd"}),
        (["leaderboard", "token"], {}),
        (["leaderboard", "help"], {}),
    ):
        interaction = await bot.slash(path, options)
        await bot.answer(interaction) if path[-1] != "help" else await bot.fake.wait_for(
            lambda f, i=interaction: bot.calls(i)
        )
        first = bot.calls(interaction)[0]
        assert first.json["type"] in (4, 5) and flags(first) & EPHEMERAL, path


async def test_help_lists_every_command_from_the_tree(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    interaction = await bot.slash(["leaderboard", "help"])
    (call,) = await bot.fake.wait_for(lambda f: bot.calls(interaction))
    assert call.json["type"] == 4 and flags(call) & EPHEMERAL
    assert "/leaderboard submit ranked script [leaderboard] [gpu]" in texts(call)
    assert "/admin sync" in texts(call)


@pytest.mark.slow
async def test_core_down_is_answered_privately_with_what_to_do(make_system, make_bot):
    system = await make_system(FakeRunner())
    bot = await make_bot(system)
    await system.service.stop()  # NATS stays up; nobody answers commands any more
    interaction = await bot.slash(["leaderboard", "list"])
    answer = await bot.answer(interaction)
    assert flags(answer) & EPHEMERAL and "not answering right now" in texts(answer)


async def test_eval_code_attaches_the_harness_as_one_archive(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    interaction = await bot.slash(["leaderboard", "eval-code"])
    answer = await bot.answer(interaction)
    (archive,) = bot.fake.files[interaction.original]
    assert archive["name"].startswith("the-evaluation-harness") and archive["name"].endswith(".zip")
    names = zipfile.ZipFile(io.BytesIO(archive["data"])).namelist()
    assert "harness/timing.py" in names and names == sorted(names)
    assert "harness/timing.py" in texts(answer)


async def test_task_attaches_the_reference_files(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    answer = await bot.answer(await bot.slash(["leaderboard", "reference-code"], {"leaderboard": "vectoradd"}))
    assert {"reference.py", "task.py", "utils.py"} <= {f["name"] for f in answer.files}
    assert "Add two fp32 vectors" in texts(answer)


async def test_history_of_another_user_comes_with_a_chart(make_system, make_bot):
    system = await make_system(FakeRunner())
    bot = await make_bot(system)
    ada = await bot.submit(CORRECT, leaderboard="vectoradd")
    await bot.answer(ada)
    await bot.fake.wait_for(
        lambda f: any("ranked passed" in texts(c) for c in f.calls_to("POST", "/channels/{channel}/messages"))
    )
    interaction = await bot.slash(
        ["leaderboard", "history"], {"leaderboard": "vectoradd"}, user=payloads.BOB, users={"user": payloads.ADA}
    )
    answer = await bot.answer(interaction)
    assert "Ada's progress on vectoradd" in texts(answer)
    assert [f["name"] for f in answer.files] == ["chart-1.png"] and answer.files[0]["size"] > 2000
    assert answer.json["embeds"][0]["image"]["url"] == "attachment://chart-1.png"


async def test_admin_sync_needs_manage_server_and_registers_globally_on_request(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    refused = await bot.slash(["admin", "sync"], {"scope": "global"})
    answer = await bot.fake.wait_for(lambda f: bot.calls(refused))
    assert flags(answer[0]) & EPHEMERAL and "Only server admins" in texts(answer[0])
    assert not bot.fake.commands.get("global")

    allowed = await bot.slash(
        ["admin", "sync"], {"scope": "global"}, roles=[o.ADMIN_ROLE], permissions=o.MEMBER | o.ADMINISTRATOR
    )
    answer = await bot.answer(allowed)
    assert "Registered 2 commands for every server" in texts(answer)
    assert {c["name"] for c in bot.fake.commands["global"]} == {"leaderboard", "admin"}


async def test_the_command_on_the_bus_vouches_for_the_discord_user(make_system, make_bot, nats_url):
    bot = await make_bot(await make_system(FakeRunner()))
    seen: list[Command] = []
    watcher = await nats.connect(nats_url)

    async def copy(msg) -> None:
        seen.append(decode(Command, msg.data))

    await watcher.subscribe(subjects.command_subject("discord"), cb=copy)  # no queue group: a copy of each
    await watcher.flush()  # the server knows it before the command goes
    try:
        interaction = await bot.slash(
            ["leaderboard", "show"],
            {"leaderboard": "vectoradd", "gpu": "CPU"},
            roles=[o.ADMIN_ROLE, o.COMPETITOR_ROLE, "1300000000000000999"],
            permissions=o.MEMBER | o.ADMINISTRATOR,
        )
        await bot.answer(interaction)
        await asyncio.wait_for(_until(lambda: seen), 10)
    finally:
        await watcher.close()
    (cmd,) = seen
    assert cmd.kind is CommandKind.SHOW and cmd.args == {"leaderboard": "vectoradd", "gpu": "CPU"}
    assert (cmd.actor.platform, cmd.actor.user_id, cmd.actor.display_name) == (
        Platform.DISCORD,
        payloads.ADA["id"],
        "Ada",
    )
    assert cmd.actor.roles == ["Admin", "Competitor", "1300000000000000999", "Manage Server"]
    assert (cmd.reply_to.channel, cmd.reply_to.user) == (o.KERNELS_CHANNEL, payloads.ADA["id"])


async def test_a_command_discord_knows_but_the_bot_does_not_is_explained(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    interaction = await bot.slash(["leaderboard", "retired-command"])
    (answer,) = await bot.fake.wait_for(lambda f: bot.calls(interaction))
    assert answer.json["type"] == 4 and flags(answer) & EPHEMERAL and "/admin sync" in texts(answer)


async def _until(condition) -> None:
    while not condition():
        await asyncio.sleep(0.05)


async def test_a_token_from_discord_is_shown_once_privately_and_can_be_listed_and_revoked(make_system, make_bot):
    system = await make_system(FakeRunner())
    bot = await make_bot(system)
    asked = await bot.slash(["leaderboard", "token"])
    made = await bot.answer(asked)
    assert flags(bot.calls(asked)[0]) & EPHEMERAL
    (token,) = {
        word.strip("`")
        for word in texts(made).split()
        if word.strip("`").startswith("kr_") and len(word.strip("`")) > 40
    }
    owner = system.store.tokens.use(token_sha256(token), datetime.now(UTC))
    assert owner is not None and owner.identities == [f"discord:{payloads.ADA['id']}"]  # the Discord person, no other
    listed = await bot.answer(await bot.slash(["leaderboard", "token"], {"action": "list"}))
    assert token[:12] in texts(listed) and token not in texts(listed)
    revoked = await bot.answer(await bot.slash(["leaderboard", "token"], {"action": "revoke", "prefix": token[:12]}))
    assert "no longer works" in texts(revoked)
    assert system.store.tokens.use(token_sha256(token), datetime.now(UTC)).revoked_at is not None


async def test_a_member_who_manages_the_server_is_an_admin_and_admin_answers_are_private(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    await bot.answer(await bot.slash(["leaderboard", "list"]))  # Ada is known
    interaction = await bot.slash(
        ["admin", "ban"],
        {"person_typed": f"discord:{payloads.ADA['id']}", "reason": "spams the queue"},
        user=payloads.BOB,
        permissions=o.MEMBER | o.MANAGE_GUILD,
    )
    banned = await bot.answer(interaction)
    assert "Ada can no longer submit (spams the queue)" in texts(banned)
    assert flags(bot.calls(interaction)[0]) & EPHEMERAL  # deferred privately, as on Slack
    refused = await bot.answer(
        await bot.slash(["admin", "unban"], {"person_typed": f"discord:{payloads.ADA['id']}"}, user=payloads.BOB)
    )
    assert "Only admins can use `admin unban`" in texts(refused)  # without Manage Server, nor a role
