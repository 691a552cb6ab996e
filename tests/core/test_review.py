"""``report`` and ``admin review``, called directly on a DuckDB file: a report waits in review until a decision, a
cheat decision invalidates through the ``admin invalidate`` path, and a podium entry held at a challenge's close is a
case of its own. The scheduler and its podium re-runs are the real ones (tests/core/test_challenges.py's kit)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_challenges import FIXTURES, T0, Clock, Jobs, ask, ranked, result, tick_answering, week_48

from core.contracts.config import Settings
from core.contracts.messages import Actor, Command, CommandKind, PartKind, Platform, Reply, ReplyTo
from core.service.bootstrap import build_deps
from core.service.db import Database
from core.service.deps import Deps
from core.service.handlers import dispatch
from core.service.leaderboards import load_new_problems
from core.service.reports import MAX_REASON_CHARS, REPORTS_PER_DAY
from core.service.scheduler import Scheduler
from harness.result import Failure, FailureKind, Status
from storage.records import ResultRecord
from storage.store import Store


@pytest.fixture
def notices() -> list[Reply]:
    """What the core published beyond its answers: the admins' notices."""
    return []


@pytest.fixture
async def env(tmp_path: Path, notices: list[Reply]) -> AsyncIterator[tuple[Deps, Jobs, Clock, Scheduler]]:
    problems = tmp_path / "problems"
    shutil.copytree(FIXTURES / "vectoradd", problems / "vectoradd")
    settings = Settings(
        home=tmp_path / "var", problems_dir=problems, admins=["discord:boss"], admin_channels=["discord:mods"]
    )
    db = Database(Store(settings.database))
    await db.write(load_new_problems, db.store, problems, ["CPU"])
    jobs, clock = Jobs(), Clock()

    async def notice(reply: Reply) -> None:
        notices.append(reply)

    deps = build_deps(db, settings, jobs.publish, now=clock, gpu_pools=("CPU",), publish_reply=notice)

    async def publish(reply) -> None:
        pass

    yield deps, jobs, clock, Scheduler(deps, publish)
    await deps.writer.close()
    await db.close()


def submission_of(deps: Deps, user: str) -> int:
    return next(r.submission_id for r in deps.db.store.ranking("vectoradd", "CPU") if r.display_name == user.title())


async def test_a_report_waits_in_review_until_a_cheat_decision_invalidates_it(env, notices) -> None:
    deps, _, clock, _ = env
    ranked(deps, "ada", 1.0)
    ranked(deps, "bob", 5.0)
    ada = submission_of(deps, "ada")
    clock.now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    reported = await ask(deps, "bob", CommandKind.REPORT, id=f"#{ada}", reason="  reads the   answer from a file ")
    assert reported.data["submission_id"] == ada and "not told who reported" in reported.parts[0].text
    [notice] = notices  # the admins' channel hears of it, with who reported and why
    assert (notice.reply_to.platform, notice.reply_to.channel) == (Platform.DISCORD, "mods")
    assert "**Bob** reported #" in notice.parts[0].text and "reads the answer from a file" in notice.parts[0].text

    clock.now = datetime(2026, 11, 23, 15, 30, tzinfo=UTC)
    [case] = (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"]
    assert (case["submission_id"], case["leaderboard"], case["gpu"], case["author"], case["score_us"]) == (
        ada,
        "vectoradd",
        "CPU",
        "Ada",
        1.0,
    )
    assert case["why"] == "reported: reads the answer from a file" and case["reports"] == 1

    one = await ask(deps, "boss", CommandKind.REVIEW, id=str(ada))
    assert one.data["open"] and [r["reporter"] for r in one.data["reports"]] == ["Bob"]
    assert one.data["source"].startswith("def custom_kernel") and one.data["runs"][0]["result"]["shapes"]
    tables = [p for p in one.parts if p.kind is PartKind.TABLE]
    assert any("median" in t.headers and "of peak" in t.headers for t in tables)  # per-shape figures, roofline %
    assert any(p.kind is PartKind.CODE and "custom_kernel" in p.text for p in one.parts)

    decided = await ask(deps, "boss", CommandKind.REVIEW, id=str(ada), decide="cheat", note="reads a file")
    assert decided.data == {
        "submission_id": ada,
        "decision": "cheat",
        "reports_closed": 1,
        "held_cleared": 0,
        "runs_released": 0,
    }, decided.parts
    assert [r.display_name for r in deps.db.store.ranking("vectoradd", "CPU")] == ["Bob"]
    assert deps.db.store.admin.invalid_reason(ada) == "reads a file"
    assert (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"] == []
    [(_, actor, action, detail)] = deps.db.store.admin.audit(T0)
    assert (action, detail["submission"], detail["reports_closed"]) == ("review cheat", ada, 1) and "Boss" in actor
    again = await ask(deps, "boss", CommandKind.REVIEW, id=str(ada), decide="fine")
    assert "has no open case" in again.parts[0].text
    late = await ask(deps, "cy", CommandKind.REPORT, id=str(ada), reason="cheats")
    assert "invalidated already" in late.parts[0].text


async def test_admin_invalidate_closes_the_reports_of_what_it_invalidates(env) -> None:
    deps, _, _, _ = env
    ranked(deps, "ada", 1.0)
    ada = submission_of(deps, "ada")
    await ask(deps, "bob", CommandKind.REPORT, id=str(ada), reason="too fast to be true")
    await ask(deps, "boss", CommandKind.INVALIDATE, id=str(ada), reason="caches the output")
    assert (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"] == []
    [closed] = deps.db.store.reports.of_submission(ada)
    assert closed.resolution == "cheat"


async def test_review_is_for_admins_alone(env) -> None:
    deps, _, _, _ = env
    ranked(deps, "ada", 1.0)
    ada = submission_of(deps, "ada")
    await ask(deps, "bob", CommandKind.REPORT, id=str(ada), reason="cheats")
    for args in ({}, {"id": str(ada)}, {"id": str(ada), "decide": "cheat"}):
        refused = await ask(deps, "bob", CommandKind.REVIEW, **args)
        assert refused.data["error"] == "forbidden" and "Only admins" in refused.parts[0].text
    assert [r.display_name for r in deps.db.store.ranking("vectoradd", "CPU")] == ["Ada"]
    visitor = Command(Actor(Platform.WEB, ""), ReplyTo(Platform.WEB, "page"), CommandKind.REPORT, {"id": "1"})
    assert (await dispatch(visitor, deps)).data["error"] == "unauthenticated"


async def test_a_bad_report_is_refused_in_one_sentence_and_one_open_report_a_person(env) -> None:
    deps, _, _, _ = env
    ranked(deps, "ada", 1.0)
    ada = submission_of(deps, "ada")
    refusals = {
        "There is no submission #999": {"id": "999", "reason": "cheats"},
        "as a number": {"id": "abc", "reason": "cheats"},
        "--reason": {"id": str(ada), "reason": "   "},
        f"to {MAX_REASON_CHARS} characters": {"id": str(ada), "reason": "x" * (MAX_REASON_CHARS + 1)},
    }
    for words, args in refusals.items():
        refused = await ask(deps, "bob", CommandKind.REPORT, **args)
        assert "error" in refused.data and words in refused.parts[0].text, (args, refused.parts)
        assert refused.parts[0].text.count(". ") <= 1  # one sentence (and what to do)
    assert deps.db.store.reports.open() == []
    assert "report_id" in (await ask(deps, "bob", CommandKind.REPORT, id=str(ada), reason="cheats")).data
    twice = await ask(deps, "bob", CommandKind.REPORT, id=str(ada), reason="still cheats")
    assert "reported #" in twice.parts[0].text and "already" in twice.parts[0].text
    assert "report_id" in (await ask(deps, "cy", CommandKind.REPORT, id=str(ada), reason="me too")).data
    [case] = (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"]
    assert case["reports"] == 2


async def test_reports_are_limited_per_person_and_day(env) -> None:
    deps, _, _, _ = env
    for n in range(REPORTS_PER_DAY + 1):
        ranked(deps, f"p{n}", 1.0 + n)
    ids = [r.submission_id for r in deps.db.store.ranking("vectoradd", "CPU")]
    for sub_id in ids[:REPORTS_PER_DAY]:
        assert "report_id" in (await ask(deps, "eve", CommandKind.REPORT, id=str(sub_id), reason="hm")).data
    limited = await ask(deps, "eve", CommandKind.REPORT, id=str(ids[-1]), reason="hm")
    assert limited.data["error"] == "rate_limited" and "tomorrow" in limited.parts[0].text


async def test_a_podium_entry_held_at_the_close_is_a_case_until_an_admin_clears_it(env, notices) -> None:
    deps, jobs, clock, scheduler = env
    await week_48(deps)
    clock.now = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    ranked(deps, "ada", 10.0)
    ranked(deps, "bob", 12.5)
    bob = submission_of(deps, "bob")
    assert (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"] == []
    clock.now = datetime(2026, 11, 25, 18, 0, 5, tzinfo=UTC)
    await tick_answering(scheduler, jobs, {"ada.py": result(10.0), "bob.py": result(20.0)})  # bob's re-run: slower
    [notice] = notices
    assert notice.reply_to.channel == "mods" and "1 podium entry of **Week 48** held" in notice.parts[0].text

    clock.now = datetime(2026, 11, 26, 20, 0, tzinfo=UTC)
    [case] = (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"]
    assert (case["submission_id"], case["gpu"], case["score_us"], case["held"]) == (bob, "CPU", 12.5, 1)
    assert case["why"].startswith("held at the close of Week 48: its re-run scored 20.00 µs, outside")
    one = await ask(deps, "boss", CommandKind.REVIEW, id=str(bob))
    [held] = one.data["held"]
    assert (held["challenge"], held["rank"], held["rerun_us"]) == ("Week 48", 2, 20.0)
    assert "Held by the podium's verification" in str(one.parts)

    cleared = await ask(deps, "boss", CommandKind.REVIEW, id=str(bob), decide="fine", note="a noisy machine")
    assert (cleared.data["reports_closed"], cleared.data["held_cleared"]) == (0, 1), cleared.parts
    assert (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"] == []
    assert [r.display_name for r in deps.db.store.ranking("vectoradd", "CPU")] == ["Ada", "Bob"]
    assert deps.db.store.admin.audit(T0)[0][2] == "review fine"
    assert not (await ask(deps, "boss", CommandKind.REVIEW, id=str(bob))).data["open"]


async def test_a_run_the_precheck_held_is_a_case_and_fine_lets_it_count(env) -> None:
    deps, _, _, _ = env
    ranked(deps, "ada", 3.0, finished=False)
    held = result(3.0)  # passed, then held as harness/host/precheck.py holds a ranked run with a flagged construct
    held.status, held.failure = (
        Status.FAILED,
        Failure(FailureKind.HELD_FOR_REVIEW, "Held for review: line 4 starts a thread"),
    )
    deps.db.store.record_results([ResultRecord("run-ada", held, "w", 1, T0)])
    ada = deps.db.store.run("run-ada").submission_id
    assert deps.db.store.ranking("vectoradd", "CPU") == []
    [case] = (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"]
    assert (case["submission_id"], case["held_runs"], case["score_us"]) == (ada, 1, 3.0)
    assert case["why"] == "on CPU: Held for review: line 4 starts a thread"
    fine = await ask(deps, "boss", CommandKind.REVIEW, id=str(ada), decide="fine", note="the thread is joined")
    assert fine.data["runs_released"] == 1 and "now in the ranking" in fine.parts[0].text
    assert [(r.display_name, r.score_us) for r in deps.db.store.ranking("vectoradd", "CPU")] == [("Ada", 3.0)]
    assert (await ask(deps, "boss", CommandKind.REVIEW)).data["cases"] == []
