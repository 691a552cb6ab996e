"""Roles, bans, invalidations, limits and the audit log, called directly on a DuckDB file with the seed problem."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_manage import identity_archive, passed

from core.contracts.config import Settings
from core.contracts.messages import Actor, Attachment, Command, CommandKind, Platform, Reply, ReplyTo
from core.service import validation
from core.service.bootstrap import build_deps
from core.service.db import Database
from core.service.deps import Deps
from core.service.handlers import dispatch
from core.service.leaderboards import load_new_problems
from harness.result import EvalResult, Mode, Status
from storage.records import ResultRecord
from storage.store import Store

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"
KERNEL = Attachment("k.py", b"def custom_kernel(data):\n    a, b = data\n    return a + b\n")


@pytest.fixture
async def deps(tmp_path: Path) -> AsyncIterator[Deps]:
    problems = tmp_path / "problems"
    shutil.copytree(FIXTURES / "vectoradd", problems / "vectoradd")
    settings = Settings(home=tmp_path / "var", problems_dir=problems, admins=["discord:boss"])
    db = Database(Store(settings.database))
    await db.write(load_new_problems, db.store, problems, ["CPU"])

    async def publish(job) -> bool:
        return True

    built = build_deps(db, settings, publish, now=lambda: datetime(2026, 11, 26, 12, tzinfo=UTC), gpu_pools=("CPU",))
    yield built
    await built.writer.close()
    await db.close()


async def ask(
    deps: Deps, user: str, kind: CommandKind, roles: tuple[str, ...] = (), attachment: Attachment | None = None, **args
) -> Reply:
    actor = Actor(Platform.DISCORD, user, user.title(), roles=list(roles))
    return await dispatch(Command(actor, ReplyTo(Platform.DISCORD, "c1"), kind, args, attachment), deps)


async def submitted(deps: Deps, user: str, score_us: float) -> int:
    accepted = await ask(deps, user, CommandKind.SUBMIT, attachment=KERNEL, leaderboard="vectoradd")
    [run] = accepted.data["runs"]
    await deps.writer.results(
        [
            ResultRecord(
                run["run_id"],
                EvalResult(Status.PASSED, Mode.RANKED, "vectoradd", score_us=score_us),
                "w",
                1,
                datetime(2026, 11, 26, 12, tzinfo=UTC),
            )
        ]
    )
    return accepted.data["submission_id"]


async def test_a_creator_manages_what_they_created_and_an_admin_everything(deps) -> None:
    refused = await ask(deps, "cy", CommandKind.BOARD_CREATE, attachment=identity_archive(), name="cys")
    assert refused.data["error"] == "forbidden" and "creator role" in refused.parts[0].text
    await ask(deps, "cy", CommandKind.LIST)  # cy is known now
    granted = await ask(deps, "boss", CommandKind.ROLE, action="grant", person="discord:cy", role="creator")
    assert granted.data["action"] == "grant", granted.parts
    checking = await ask(deps, "cy", CommandKind.BOARD_CREATE, attachment=identity_archive(), name="cys")
    await validation.finished(passed(checking.data["validation_run"]), deps)
    assert (await ask(deps, "cy", CommandKind.BOARD_CLOSE, leaderboard="cys")).data["state"] == "closed"
    others = await ask(deps, "cy", CommandKind.BOARD_CLOSE, leaderboard="vectoradd")  # a seed problem
    assert others.data["error"] == "forbidden" and "created by someone else" in others.parts[0].text
    by_role = await ask(deps, "dee", CommandKind.BOARD_CLOSE, roles=("Leaderboard Admin",), leaderboard="vectoradd")
    assert by_role.data["state"] == "closed"  # a Discord server role counts
    await ask(deps, "boss", CommandKind.ROLE, action="revoke", person="discord:cy", role="creator")
    assert (await ask(deps, "cy", CommandKind.BOARD_REOPEN, leaderboard="cys")).data["error"] == "forbidden"
    assert (await ask(deps, "cy", CommandKind.ROLE, action="grant", person="discord:cy", role="admin")).data[
        "error"
    ] == "forbidden"


async def test_ban_stops_submissions_until_unban(deps) -> None:
    await ask(deps, "ada", CommandKind.LIST)
    await ask(deps, "boss", CommandKind.BAN, person="discord:ada", reason="spamming the queue")
    refused = await ask(deps, "ada", CommandKind.SUBMIT, attachment=KERNEL, leaderboard="vectoradd")
    assert refused.data["error"] == "forbidden" and "spamming the queue" in refused.parts[0].text
    await ask(deps, "boss", CommandKind.UNBAN, person="discord:ada")
    assert (
        "submission_id" in (await ask(deps, "ada", CommandKind.SUBMIT, attachment=KERNEL, leaderboard="vectoradd")).data
    )
    again = await ask(deps, "boss", CommandKind.UNBAN, person="discord:ada")
    assert "is not banned" in again.parts[0].text


async def test_an_invalidated_submission_leaves_every_ranking_and_stays_marked(deps) -> None:
    cheat = await submitted(deps, "ada", 1.0)
    await submitted(deps, "bob", 5.0)
    before = await deps.db.read(deps.db.store.ranking, "vectoradd", "CPU")
    assert [r.display_name for r in before] == ["Ada", "Bob"]
    missing = await ask(deps, "boss", CommandKind.INVALIDATE, id="#3")
    assert "--reason" in missing.parts[0].text
    done = await ask(deps, "boss", CommandKind.INVALIDATE, id=f"#{cheat}", reason="reads the answer from a file")
    assert done.data["submission_id"] == cheat
    after = await deps.db.read(deps.db.store.ranking, "vectoradd", "CPU")
    assert [r.display_name for r in after] == ["Bob"]
    shown = await ask(deps, "ada", CommandKind.SUBMISSION, id=str(cheat))
    assert shown.data["invalidated"] == "reads the answer from a file" and "Invalidated" in shown.parts[0].text


async def test_a_persons_own_limit_and_the_audit_log(deps) -> None:
    await ask(deps, "ada", CommandKind.LIST)
    bad = await ask(deps, "boss", CommandKind.LIMIT, person="discord:ada", rate="lots")
    assert "like 5/min" in bad.parts[0].text
    await ask(deps, "boss", CommandKind.LIMIT, person="discord:ada", rate="1/min")
    assert (
        "submission_id" in (await ask(deps, "ada", CommandKind.SUBMIT, attachment=KERNEL, leaderboard="vectoradd")).data
    )
    limited = await ask(deps, "ada", CommandKind.SUBMIT, attachment=KERNEL, leaderboard="vectoradd")
    assert limited.data["error"] == "rate_limited" and "made 1 submission to CPU" in limited.parts[0].text
    log = await ask(deps, "boss", CommandKind.AUDIT, since="2000-01-01 00:00")
    assert [(r["who"], r["what"]) for r in log.data["rows"]] == [("Boss (person 2)", "limit")]
    assert (await ask(deps, "ada", CommandKind.AUDIT)).data["error"] == "forbidden"


async def test_a_leaderboards_own_limit_counts_everyone_and_holds_after_a_restart(deps) -> None:
    refused = await ask(deps, "ada", CommandKind.LIMIT, person="vectoradd", rate="2/min")
    assert refused.data["error"] == "forbidden"
    set_ = await ask(deps, "boss", CommandKind.LIMIT, person="vectoradd", rate="2/min")
    assert set_.data == {"leaderboard": "vectoradd", "per_minute": 2}, set_.parts
    for user in ("ada", "bob"):
        assert (
            "submission_id"
            in (await ask(deps, user, CommandKind.SUBMIT, attachment=KERNEL, leaderboard="vectoradd")).data
        )
    limited = await ask(deps, "cy", CommandKind.SUBMIT, attachment=KERNEL, leaderboard="vectoradd")
    assert limited.data["error"] == "rate_limited"
    assert "vectoradd has had 2 submissions to CPU in the last minute" in limited.parts[0].text

    restarted = build_deps(deps.db, deps.settings, deps.publish_job, now=deps.now, gpu_pools=("CPU",))
    try:  # a fresh core: the limit and the count come from DuckDB
        again = await ask(restarted, "cy", CommandKind.SUBMIT, attachment=KERNEL, leaderboard="vectoradd")
        assert again.data["error"] == "rate_limited", again.parts
    finally:
        await restarted.writer.close()
    log = await ask(deps, "boss", CommandKind.AUDIT, since="2000-01-01 00:00")
    assert [(r["what"], r["detail"]) for r in log.data["rows"]] == [
        ("limit", {"leaderboard": "vectoradd", "per_minute": 2})
    ]


async def test_a_command_that_names_nobody_asks_for_the_person_and_only_a_limit_for_a_leaderboard(deps) -> None:
    for kind, args in ((CommandKind.BAN, {}), (CommandKind.ROLE, {"action": "grant", "role": "admin"})):
        answer = await ask(deps, "boss", kind, **args)
        assert answer.parts[0].text == "Name the person (discord:ID, slack:ID or their name).", kind
    limit = await ask(deps, "boss", CommandKind.LIMIT, rate="2/min")
    assert limit.parts[0].text == "Name the person (discord:ID, slack:ID or their name) or the leaderboard."


async def test_the_audit_names_people_invalidating_twice_is_refused_and_nobody_reports_their_own(deps) -> None:
    ada = await submitted(deps, "ada", 1.0)
    limited = await ask(deps, "boss", CommandKind.LIMIT, person="discord:ada", rate="1/min")
    assert "Ada may submit 1 time a minute" in limited.parts[0].text
    await ask(deps, "boss", CommandKind.BAN, person="discord:ada", reason="spam")
    first = await ask(deps, "boss", CommandKind.INVALIDATE, id=str(ada), reason="reads the answer")
    assert first.data["submission_id"] == ada
    again = await ask(deps, "boss", CommandKind.INVALIDATE, id=str(ada), reason="twice")
    assert "invalidated already (reads the answer)" in again.parts[0].text
    log = (await ask(deps, "boss", CommandKind.AUDIT, since="2000-01-01 00:00")).data["rows"]
    assert [r["what"] for r in log].count("invalidate") == 1
    assert {r["detail"].get("person") for r in log if r["what"] in ("limit", "ban")} == {"Ada (person 1)"}
    bob = await submitted(deps, "bob", 5.0)
    own = await ask(deps, "bob", CommandKind.REPORT, id=str(bob), reason="looks odd")
    assert "your own submission" in own.parts[0].text
