"""Who may do what, through the real core, NATS and DuckDB: tokens, identities, admins, the access rule."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

from api_kit import token_of

from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, Command, CommandKind, PartKind, Platform, Reply, ReplyTo, Tone
from core.contracts.tokenformat import token_sha256
from core.service.people import People
from runners.fake import FakeRunner

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"
CORRECT = (FIXTURES / "submissions" / "correct.py").read_text()
TERMINAL = Actor(platform=Platform.CLI, user_id="")


def texts(reply: Reply) -> str:
    return "\n".join([p.text for p in reply.parts] + [" ".join(r) for p in reply.parts for r in p.rows])


def signed(cmd: Command, token: str) -> Command:
    """The command as the API process sends it for a request carrying ``token``."""
    cmd.credential_sha256 = token_sha256(token)
    return cmd


async def terminal(system, token: str, kind: CommandKind, **args) -> Reply:
    return await system.bus.request(
        signed(query_command(TERMINAL, ReplyTo(Platform.CLI, system.route), kind, **args), token), timeout_s=10
    )


async def terminal_submit(system, token: str, actor: Actor = TERMINAL) -> Reply:
    cmd = submit_command(actor, ReplyTo(Platform.CLI, system.route), "k.py", CORRECT.encode(), leaderboard="vectoradd")
    return await system.bus.request(signed(cmd, token), timeout_s=10)


async def chat(system, asker: str, kind: CommandKind, **args) -> Reply:
    """A command from a Discord user, with any arguments (``user`` included)."""
    return await system.bus.request(
        query_command(system.actor(asker), ReplyTo(Platform.DISCORD, system.route), kind, **args), timeout_s=10
    )


async def submitted(system, user: str) -> int:
    accepted = await system.submit(user, CORRECT, leaderboard="vectoradd")
    await system.finals({run["run_id"] for run in accepted.data["runs"]})
    return accepted.data["submission_id"]


async def test_the_terminal_without_a_token_is_refused_whatever_name_it_claims(make_system):
    system = await make_system(FakeRunner())
    claimed = Actor(platform=Platform.CLI, user_id="ada", display_name="Ada")
    for kind in (CommandKind.MINE, CommandKind.TOKEN):
        reply = await system.bus.request(query_command(claimed, ReplyTo(Platform.CLI, "r"), kind, leaderboard="v"))
        assert reply.tone is Tone.ERROR and reply.data["error"] == "unauthenticated"
        assert "personal token" in texts(reply) and "kernelrank login" in texts(reply)
    public = await system.bus.request(query_command(claimed, ReplyTo(Platform.CLI, "r"), CommandKind.LIST))
    assert public.tone is not Tone.ERROR  # rankings are public: a visitor, whatever name it claims
    refused = await system.bus.request(
        submit_command(claimed, ReplyTo(Platform.CLI, "r"), "k.py", CORRECT.encode(), leaderboard="vectoradd")
    )
    assert refused.data["error"] == "unauthenticated"
    assert system.store.stats().submissions == 0


async def test_unknown_malformed_and_revoked_tokens_get_one_sentence(make_system):
    system = await make_system(FakeRunner())
    unknown = await terminal(system, "kr_" + "x" * 43, CommandKind.LIST)
    assert unknown.data["error"] == "unauthenticated" and "not valid" in texts(unknown)
    malformed = await system.bus.request(
        dataclasses.replace(
            query_command(TERMINAL, ReplyTo(Platform.CLI, "r"), CommandKind.LIST), credential_sha256="not-a-hash"
        )
    )
    assert malformed.data["error"] == "unauthenticated"

    token = await token_of(system, "ada")
    assert (await terminal(system, token, CommandKind.LIST)).tone is not Tone.ERROR
    listed = await system.ask("ada", CommandKind.TOKEN, action="list")
    (prefix,) = [row[0] for row in listed.parts[0].rows]
    assert token.startswith(prefix) and token not in texts(listed)
    revoked = await system.ask("ada", CommandKind.TOKEN, action="revoke", prefix=prefix)
    assert revoked.tone is Tone.INFO and prefix in texts(revoked)
    after = await terminal(system, token, CommandKind.LIST)  # at once: the core forgets a revoked token
    assert after.data["error"] == "unauthenticated" and "revoked on" in texts(after)
    assert len(texts(after).split(". ")) <= 2


async def test_a_token_from_discord_is_the_same_person_at_the_terminal(make_system):
    system = await make_system(FakeRunner())
    submission = await submitted(system, "ada")  # from Discord
    token = await token_of(system, "ada")
    mine = await terminal(system, token, CommandKind.MINE, leaderboard="vectoradd")
    assert f"#{submission}" in texts(mine)
    me = await terminal(system, token, CommandKind.TOKEN, action="whoami")
    assert me.data["display_name"] == "Ada" and me.data["admin"] is False
    detail = await terminal(system, token, CommandKind.SUBMISSION, id=str(submission))
    assert any(p.kind is PartKind.CODE for p in detail.parts)


async def test_nobody_submits_as_another_person(make_system):
    system = await make_system(FakeRunner())
    ada = await token_of(system, "ada")
    await submitted(system, "bob")
    posing = Actor(platform=Platform.CLI, user_id="bob", display_name="Bob")  # a token wins over any actor
    accepted = await terminal_submit(system, ada, actor=posing)
    detail = system.store.submission_detail(accepted.data["submission_id"])
    assert detail.display_name == "Ada"
    bob = system.store.find_person("discord", "bob")
    assert detail.person_id != bob
    bobs = await system.ask("bob", CommandKind.MINE, leaderboard="vectoradd")
    assert f"#{accepted.data['submission_id']}" not in texts(bobs)


async def test_source_and_details_are_the_authors_and_admins_alone(make_system):
    system = await make_system(FakeRunner(), admins=["discord:root"])
    theirs = await submitted(system, "ada")
    public = await system.ask("bob", CommandKind.SUBMISSION, id=str(theirs))  # the verdict, not the rest
    assert not public.data["details"] and "only its author and admins" in texts(public)
    assert "ranked passed" in texts(public) and CORRECT.splitlines()[0] not in texts(public)
    assert not any(p.kind is PartKind.CODE for p in public.parts) and "Ran on" not in texts(public)
    admin = await system.ask("root", CommandKind.SUBMISSION, id=str(theirs))
    assert [p.text for p in admin.parts if p.kind is PartKind.CODE] == [CORRECT]
    own = await system.ask("ada", CommandKind.SUBMISSION, id=str(theirs))
    assert own.data["details"] and "Ran on" in texts(own)

    history = await chat(system, "bob", CommandKind.HISTORY, leaderboard="vectoradd", user="ada")  # scores only
    assert history.title == "ada's progress on vectoradd" and history.tone is not Tone.ERROR
    assert not any(p.kind is PartKind.CODE for p in history.parts)
    missing = await chat(system, "bob", CommandKind.HISTORY, leaderboard="vectoradd", user="nobody")
    assert missing.data["error"] == "not_found"
    assert system.store.find_person("discord", "nobody") is None  # asking about someone creates no one


async def test_a_closed_leaderboard_opens_its_submissions_only_if_it_says_so(make_system):
    system = await make_system(FakeRunner())
    theirs = await submitted(system, "ada")
    board = system.store.get_leaderboard("vectoradd")
    closed = dataclasses.replace(board, deadline=datetime.now(UTC) - timedelta(minutes=1))
    for public, allowed in ((False, False), (True, True)):
        system.store.upsert_leaderboard(dataclasses.replace(closed, public_after_close=public))
        system.service.deps.boards._boards.clear()  # the core caches leaderboards: only it writes them
        reply = await system.ask("bob", CommandKind.SUBMISSION, id=str(theirs))
        assert reply.data["details"] is allowed, texts(reply)
    system.store.upsert_leaderboard(
        dataclasses.replace(board, deadline=datetime.now(UTC) + timedelta(days=1), public_after_close=True)
    )
    system.service.deps.boards._boards.clear()
    still_open = await system.ask("bob", CommandKind.SUBMISSION, id=str(theirs))
    assert not still_open.data["details"] and "until vectoradd closes" in texts(still_open)


async def test_admins_issue_list_and_revoke_tokens_of_anyone(make_system):
    system = await make_system(FakeRunner(), admins=["discord:root"])
    refused = await system.ask("ada", CommandKind.ISSUE_TOKEN, name="cy")
    assert refused.data["error"] == "forbidden"
    issued = await system.ask("root", CommandKind.ISSUE_TOKEN, name="cy")
    cy = issued.data["token"]
    me = await terminal(system, cy, CommandKind.TOKEN, action="whoami")
    assert me.data["display_name"] == "cy" and not me.data["admin"]

    ada = await token_of(system, "ada")
    prefix = ada[:12]
    assert (await terminal(system, cy, CommandKind.TOKEN, action="revoke", prefix=prefix)).data["error"] == "not_found"
    everyone = await system.ask("root", CommandKind.TOKEN, action="list")
    assert {"cy", "Ada"} <= {row[1] for row in everyone.parts[0].rows}
    assert (await system.ask("root", CommandKind.TOKEN, action="revoke", prefix=prefix)).tone is not Tone.ERROR
    assert (await terminal(system, ada, CommandKind.LIST)).data["error"] == "unauthenticated"
    bad_name = await system.ask("root", CommandKind.ISSUE_TOKEN, name="x" * 500)
    assert bad_name.data["error"] == "invalid" and "at most 64" in texts(bad_name)


async def test_one_person_cannot_pile_up_tokens(make_system):
    system = await make_system(FakeRunner())
    for _ in range(20):
        await token_of(system, "ada")
    refused = await system.ask("ada", CommandKind.TOKEN)
    assert refused.data["error"] == "invalid" and "revoke one" in texts(refused)


async def test_the_local_users_token_makes_them_an_admin_and_replaces_the_last_one(make_system):
    old, new = "kr_" + "o" * 43, "kr_" + "n" * 43
    first = await make_system(FakeRunner(), local_token_id=f"{old[:12]}:{token_sha256(old)}", user="ada")
    me = await terminal(first, old, CommandKind.TOKEN, action="whoami")
    assert me.data == {"person_id": me.data["person_id"], "display_name": "ada", "admin": True}
    # the next `kernelrank up` issues another token: its core registers it and ends the first
    next_up = dataclasses.replace(first.settings, local_token_id=f"{new[:12]}:{token_sha256(new)}")
    later = People(first.service.db, next_up)
    caller = await later.caller(
        signed(query_command(TERMINAL, ReplyTo(Platform.CLI, "r"), CommandKind.LIST), new), datetime.now(UTC)
    )
    assert caller.admin and caller.person_id == me.data["person_id"]
    first.service.deps.people.forget([token_sha256(old)])  # as a restarted core would not know it
    assert (await terminal(first, old, CommandKind.LIST)).data["error"] == "unauthenticated"
    unknown = await terminal(first, "kr_" + "z" * 43, CommandKind.LIST)
    assert unknown.data["error"] == "unauthenticated"
