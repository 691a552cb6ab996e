"""``link``, ``unlink`` and the admins' ``admin link`` / ``admin unlink``, through ``dispatch`` on a DuckDB file."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from handler_kit import CORRECT, NOW, actor, ask

from core.contracts.commands import submit_command
from core.contracts.messages import CommandKind, Platform, Reply, ReplyTo
from core.service.deps import Deps
from core.service.handlers import dispatch
from core.service.linkcodes import CODE_TTL, MAX_FAILURES

SLACK = Platform.SLACK


def code_of(reply: Reply) -> str:
    assert reply.tone.value != "error", reply.parts
    return reply.parts[0].text.strip()


async def submit(deps: Deps, user: str, platform: Platform = Platform.DISCORD) -> int:
    cmd = submit_command(
        actor(user, platform), ReplyTo(platform, "c1"), "k.py", CORRECT, leaderboard="vectoradd", gpu=["CPU"]
    )
    return (await dispatch(cmd, deps)).data["submission_id"]


async def whoami(deps: Deps, user: str, platform: Platform = Platform.DISCORD) -> int:
    return (await ask(deps, user, CommandKind.TOKEN, platform, action="whoami")).data["person_id"]


async def test_a_code_from_discord_entered_in_slack_makes_one_person_until_unlink(deps) -> None:
    deps, _ = deps
    mine = await submit(deps, "ada")
    theirs = await submit(deps, "ada-s", SLACK)
    await ask(deps, "ada-s", CommandKind.TOKEN, SLACK, action="new")
    shown = await ask(deps, "ada", CommandKind.LINK)
    assert shown.ephemeral and "/kernelrank link" in shown.parts[1].text
    discord_person, slack_person = await whoami(deps, "ada"), await whoami(deps, "ada-s", SLACK)

    linked = await ask(deps, "ada-s", CommandKind.LINK, SLACK, code=code_of(shown).lower())  # case is forgiven
    assert linked.data == {"person_id": discord_person, "accounts": ["discord:ada", "slack:ada-s"]}
    assert await whoami(deps, "ada-s", SLACK) == discord_person
    mine_now = await ask(deps, "ada", CommandKind.MINE, leaderboard="vectoradd")
    assert {f"#{mine}", f"#{theirs}"} <= {row[0] for part in mine_now.parts for row in part.rows}
    tokens = await ask(deps, "ada", CommandKind.TOKEN, action="list")
    assert [t["label"] for t in tokens.data["tokens"]] == ["slack"]  # one set of tokens

    split = await ask(deps, "ada-s", CommandKind.UNLINK, SLACK)
    assert split.data == {"people": sorted([discord_person, slack_person])}
    assert await whoami(deps, "ada-s", SLACK) == slack_person
    assert (await ask(deps, "ada", CommandKind.TOKEN, action="list")).data.get("tokens") is None
    again = await ask(deps, "ada", CommandKind.UNLINK)
    assert again.data["error"] == "not_found" and "nothing to split" in again.parts[0].text


async def test_wrong_expired_reused_and_own_codes_are_refused(deps) -> None:
    deps, _ = deps
    code = code_of(await ask(deps, "ada", CommandKind.LINK))
    own = await ask(deps, "ada", CommandKind.LINK, code=code)
    assert own.data["error"] == "invalid" and "other account" in own.parts[0].text
    later = dataclasses.replace(deps, now=lambda: NOW + CODE_TTL + timedelta(seconds=1))
    expired = await ask(later, "ada-s", CommandKind.LINK, SLACK, code=code)
    assert expired.data["error"] == "invalid" and "10 minutes" in expired.parts[0].text

    code = code_of(await ask(deps, "ada", CommandKind.LINK))
    assert (await ask(deps, "ada-s", CommandKind.LINK, SLACK, code=code)).data["accounts"]
    reused = await ask(deps, "eve", CommandKind.LINK, SLACK, code=code)
    assert reused.data["error"] == "invalid" and "already used" in reused.parts[0].text
    assert await whoami(deps, "eve", SLACK) != await whoami(deps, "ada")


async def test_failed_attempts_are_rate_limited_even_for_the_right_code(deps) -> None:
    deps, _ = deps
    code = code_of(await ask(deps, "ada", CommandKind.LINK))
    for _ in range(MAX_FAILURES):
        assert (await ask(deps, "eve", CommandKind.LINK, SLACK, code="WRONG123")).data["error"] == "invalid"
    limited = await ask(deps, "eve", CommandKind.LINK, SLACK, code=code)
    assert limited.data["error"] == "rate_limited" and limited.data["retry_after_s"] > 0
    assert "Too many wrong codes" in limited.parts[0].text
    assert (await ask(deps, "ada-s", CommandKind.LINK, SLACK, code=code)).data["accounts"]  # others are not held up


async def test_admins_link_and_split_people_and_nobody_else_may(deps) -> None:
    deps, _ = deps
    await submit(deps, "ada")
    await submit(deps, "ada-s", SLACK)
    refused = await ask(deps, "ada", CommandKind.ADMIN_LINK, person="discord:ada", other="slack:ada-s")
    assert refused.data["error"] == "forbidden"
    linked = await ask(deps, "boss", CommandKind.ADMIN_LINK, person="discord:ada", other="slack:ada-s")
    assert linked.data["accounts"] == ["discord:ada", "slack:ada-s"]
    same = await ask(deps, "boss", CommandKind.ADMIN_LINK, person="discord:ada", other="slack:ada-s")
    assert same.data["error"] == "invalid" and "already one person" in same.parts[0].text
    split = await ask(deps, "boss", CommandKind.ADMIN_UNLINK, person="slack:ada-s")
    assert len(split.data["people"]) == 2
    assert await whoami(deps, "ada-s", SLACK) != await whoami(deps, "ada")
