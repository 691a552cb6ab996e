"""Challenges and their scheduler, called directly: a DuckDB file, a job collector answered by the test, a clock the
test moves, and the announcements the scheduler publishes collected. tests/e2e/test_challenge_e2e.py runs the same
life on the real service and across a core killed at the close."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.contracts.config import Settings
from core.contracts.messages import Actor, Attachment, Command, CommandKind, Platform, Reply, ReplyTo, RunJob, RunResult
from core.service.bootstrap import build_deps
from core.service.db import Database
from core.service.deadlines import adopt_deadlines
from core.service.deps import Deps
from core.service.handlers import dispatch
from core.service.leaderboards import load_new_problems
from core.service.podium import judge, mark_ties, verify
from core.service.scheduler import Scheduler
from harness.result import EvalResult, Failure, FailureKind, Mode, ShapeStats, Status
from storage.records import NewSubmission, ResultRecord
from storage.store import Store

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"
T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class Jobs(list[RunJob]):
    async def publish(self, job: RunJob) -> bool:
        self.append(job)
        return True


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Deps, Jobs, Clock, list[Reply], Scheduler]]:
    problems = tmp_path / "problems"
    shutil.copytree(FIXTURES / "vectoradd", problems / "vectoradd")
    settings = Settings(home=tmp_path / "var", problems_dir=problems, admins=["discord:boss"])
    db = Database(Store(settings.database))
    await db.write(load_new_problems, db.store, problems, ["CPU"])
    jobs, clock, published = Jobs(), Clock(), []
    deps = build_deps(db, settings, jobs.publish, now=clock, gpu_pools=("CPU",))

    async def publish(reply: Reply) -> None:
        published.append(reply)

    yield deps, jobs, clock, published, Scheduler(deps, publish)
    await deps.writer.close()
    await db.close()


async def ask(deps: Deps, user: str, kind: CommandKind, **args) -> Reply:
    return await dispatch(
        Command(Actor(Platform.DISCORD, user, user.title()), ReplyTo(Platform.DISCORD, "c1"), kind, args), deps
    )


def result(score_us: float, spread: float = 0.02, status: Status = Status.PASSED) -> EvalResult:
    shapes = [
        ShapeStats(
            spec={"size": 1024},
            n=100,
            median_us=score_us,
            mean_us=score_us,
            trimmed_mean_us=score_us,
            std_us=0.1,
            ci_low_us=score_us * (1 - spread),
            ci_high_us=score_us * (1 + spread),
            min_us=score_us,
            p10_us=score_us,
            p90_us=score_us,
            max_us=score_us,
            first_call_us=score_us,
        )
    ]
    return EvalResult(
        status=status,
        mode=Mode.RANKED,
        problem="vectoradd",
        shapes=shapes,
        score_us=score_us if status is Status.PASSED else None,
    )


def sent(deps: Deps, user: str, name: str, at: datetime) -> None:
    """``user``'s ranked submission ``name`` on vectoradd, sent at ``at``: its run is ``run-<name>``."""
    store = deps.db.store
    person = store.person("discord", user, user.title())
    store.add_submissions(
        [
            NewSubmission(
                command_id=f"cmd-{name}",
                person_id=person,
                leaderboard="vectoradd",
                file_name=f"{name}.py",
                source=f"def custom_kernel(data):  # {name}\n    return data[0] + data[1]\n",
                mode="ranked",
                runs=[(f"run-{name}", "CPU")],
                reply_to={"platform": "discord", "channel": "c1"},
                created_at=at,
            )
        ]
    )


def ranked(deps: Deps, user: str, score_us: float, spread: float = 0.02, finished: bool = True) -> None:
    """``user``'s ranked run on vectoradd, sent at T0; with its result unless not ``finished``."""
    sent(deps, user, user, T0)
    if finished:
        record(deps, user, score_us, spread)


def record(deps: Deps, user: str, score_us: float, spread: float = 0.02) -> None:
    """The result of ``user``'s ranked run."""
    deps.db.store.record_results(
        [ResultRecord(run_id=f"run-{user}", result=result(score_us, spread), worker="w", attempts=1, finished_at=T0)]
    )


async def tick_answering(scheduler: Scheduler, jobs: Jobs, reruns: dict[str, EvalResult]) -> None:
    """One scheduler tick, answering each podium re-run (by the file it re-runs) as ``reruns`` says."""
    tick, deps = asyncio.create_task(scheduler.tick()), scheduler.deps
    answered: set[str] = set()
    while not tick.done():
        for job in [j for j in jobs if j.run_id not in answered and j.job.mode is Mode.RANKED]:
            answered.add(job.run_id)
            assert job.submission_id == 0 and job.job.secret_seed is not None
            deps.reruns.arrived(RunResult(job.run_id, 0, job.gpu, reruns[job.job.submission_name]))
        await asyncio.sleep(0)
    await tick


async def visit(deps: Deps, kind: CommandKind, **args) -> Reply:
    """``kind`` sent as the web sends it for a visitor: no chat identity and no token."""
    return await dispatch(Command(Actor(Platform.WEB, ""), ReplyTo(Platform.WEB, "page"), kind, args), deps)


async def week_48(deps: Deps) -> None:
    """An admin's challenge around vectoradd, open from 2026-11-23 10:00 to 2026-11-25 18:00 UTC."""
    await ask(
        deps,
        "boss",
        CommandKind.CHALLENGE_CREATE,
        title="Week 48",
        leaderboards="vectoradd",
        opens="2026-11-23 10:00",
        closes="2026-11-25 18:00",
    )


async def sprint(deps: Deps) -> None:
    """An admin's challenge around vectoradd, open now until 2026-11-24 09:00 UTC, announced in discord:news."""
    await ask(
        deps,
        "boss",
        CommandKind.CHALLENGE_CREATE,
        title="Sprint",
        leaderboards="vectoradd",
        closes="2026-11-24 09:00",
        announce="discord:news",
    )


def kinds(published: list[Reply]) -> list[tuple[str, str]]:
    return [(r.data["action"], f"{r.reply_to.platform.value}:{r.reply_to.channel}") for r in published]


async def test_a_challenge_opens_reminds_closes_verifies_and_crowns_exactly_once(env) -> None:
    deps, jobs, clock, published, scheduler = env
    refused = await ask(
        deps, "ada", CommandKind.CHALLENGE_CREATE, title="Week 48", leaderboards="vectoradd", closes="2026-11-25 18:00"
    )
    assert refused.data["error"] == "forbidden"
    made = await ask(
        deps,
        "boss",
        CommandKind.CHALLENGE_CREATE,
        title="Week 48",
        leaderboards="vectoradd",
        opens="2026-11-23 10:00",
        closes="2026-11-25 18:00",
        announce="discord:news,slack:C1",
    )
    assert made.data == {"challenge": "Week 48"}, made.parts
    [board] = (await ask(deps, "ada", CommandKind.LIST)).data["leaderboards"]
    assert board["deadline"].startswith("2026-11-25T18:00") and board["opens"].startswith("2026-11-23T10:00")
    assert (await ask(deps, "ada", CommandKind.CHALLENGES)).data["challenges"][0]["state"] == "upcoming"

    await scheduler.tick()
    assert published == []  # nothing is due yet
    clock.now = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    await scheduler.tick()
    await scheduler.tick()  # a second look changes nothing
    assert kinds(published) == [("open", "discord:news"), ("open", "slack:C1")]
    for user, score in (("ada", 10.0), ("bob", 10.3), ("cy", 20.0), ("dan", 30.0)):
        ranked(deps, user, score)
    clock.now = datetime(2026, 11, 24, 18, 0, tzinfo=UTC)
    await scheduler.tick()
    clock.now = datetime(2026, 11, 25, 17, 30, tzinfo=UTC)
    await scheduler.tick()
    assert [a for a, _ in kinds(published)] == ["open", "open", "remind-24h", "remind-24h", "remind-1h", "remind-1h"]
    assert "1 h" in published[-1].parts[0].text

    clock.now = datetime(2026, 11, 25, 18, 0, 5, tzinfo=UTC)
    await tick_answering(
        scheduler, jobs, {"ada.py": result(10.1), "bob.py": result(10.2), "cy.py": result(0, status=Status.FAILED)}
    )
    closes = [r for r in published if r.data["action"] == "close"]
    assert kinds(closes) == [("close", "discord:news"), ("close", "slack:C1")]
    text = str(closes[0].parts)
    assert "🥇" in text and "🥈" in text and "Ada" in text and "a tie with #2" in text  # intervals overlap
    assert "held for review: its re-run did not pass" in text  # cy's re-run failed
    shown = await ask(deps, "ada", CommandKind.CHALLENGE, title="week 48")
    assert shown.data["state"] == "closed" and shown.data["results"]["boards"][0]["podium"][2]["verdict"] == "held"
    listed = (await ask(deps, "ada", CommandKind.CHALLENGES)).data["challenges"]
    assert listed[0]["state"] == "closed"
    board = await ask(deps, "ada", CommandKind.SHOW, leaderboard="vectoradd")
    assert "1 🥇" in str(board.parts) and "3 held" in str(board.parts)

    before = len(published)
    await scheduler.tick()
    await Scheduler(deps, scheduler.publish).tick()  # a restarted core's scheduler
    assert len(published) == before  # every action happened once
    audit = [a for (a,) in deps.db.store._con.execute("SELECT action FROM audit_log ORDER BY id").fetchall()]
    assert audit == [
        "leaderboard schedule for Week 48",
        "challenge create",
        "challenge open",
        "challenge remind-24h",
        "challenge remind-1h",
        "challenge close",
    ]


async def test_a_visitor_reads_the_challenges_and_their_standings_as_data(env) -> None:
    deps, jobs, clock, published, scheduler = env
    await week_48(deps)
    clock.now = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    ranked(deps, "ada", 10.0)
    ranked(deps, "bob", 12.5)
    assert (await ask(deps, "boss", CommandKind.TEAM_ADD, team="red", people="discord:ada")).data == {"team": "red"}
    [listed] = (await visit(deps, CommandKind.CHALLENGES)).data["challenges"]
    assert listed == {
        "title": "Week 48",
        "state": "open",
        "leaderboards": ["vectoradd"],
        "opens": "2026-11-23T10:00:00+00:00",
        "closes": "2026-11-25T18:00:00+00:00",
    }
    live = await visit(deps, CommandKind.CHALLENGE, title="week 48")
    assert live.data["state"] == "open" and live.data["opens"] == listed["opens"], live.parts
    [board] = live.data["standings"]
    assert (board["leaderboard"], board["gpu"]) == ("vectoradd", "CPU")
    assert [(r["rank"], r["name"], r["score_us"]) for r in board["rows"]] == [(1, "Ada", 10.0), (2, "Bob", 12.5)]
    assert "**vectoradd on CPU**" in str(live.parts)  # the text parts are as before

    clock.now = datetime(2026, 11, 25, 18, 0, 5, tzinfo=UTC)
    await tick_answering(scheduler, jobs, {"ada.py": result(10.0), "bob.py": result(0, status=Status.FAILED)})
    closed = (await visit(deps, CommandKind.CHALLENGE, title="Week 48")).data
    assert closed["state"] == "closed" and closed["closes"] == listed["closes"]
    podium = closed["results"]["boards"][0]["podium"]
    assert [(e["rank"], e["name"], e["verdict"]) for e in podium] == [(1, "Ada", "verified"), (2, "Bob", "held")]
    assert closed["results"]["teams"] == [["red", 10]]
    assert (await visit(deps, CommandKind.MINE, leaderboard="vectoradd")).data["error"] == "unauthenticated"


async def test_a_core_down_through_a_whole_challenge_announces_only_the_close(env) -> None:
    deps, jobs, clock, published, scheduler = env
    ranked(deps, "ada", 10.0)
    assert (await ask(deps, "boss", CommandKind.TEAM_ADD, team="red", people="discord:ada")).data == {"team": "red"}
    await sprint(deps)
    clock.now = datetime(2026, 11, 30, tzinfo=UTC)
    await tick_answering(scheduler, jobs, {"ada.py": result(10.0)})
    assert kinds(published) == [("close", "discord:news")]
    results = (await ask(deps, "ada", CommandKind.CHALLENGE, title="Sprint")).data["results"]
    assert results["teams"] == [["red", 10]]
    kernel = Attachment("k.py", b"def custom_kernel(data):\n    return data[0] + data[1]\n")
    after = await dispatch(
        Command(
            Actor(Platform.DISCORD, "ada", "Ada"),
            ReplyTo(Platform.DISCORD, "c1"),
            CommandKind.SUBMIT,
            {"leaderboard": "vectoradd"},
            kernel,
        ),
        deps,
    )
    assert "closed on 2026-11-24 09:00 UTC" in after.parts[0].text


async def test_the_close_waits_for_ranked_runs_sent_before_it_for_at_most_close_wait_s(env) -> None:
    deps, jobs, clock, published, scheduler = env
    ranked(deps, "ada", 10.0, finished=False)  # in on time, still in the queue at the close
    ranked(deps, "bob", 12.0, finished=False)
    await sprint(deps)
    clock.now = datetime(2026, 11, 24, 9, 0, 1, tzinfo=UTC)
    await scheduler.tick()
    assert published == []
    record(deps, "ada", 10.0)
    await scheduler.tick()
    assert published == []  # bob's run still waits
    clock.now = datetime(2026, 11, 24, 9, 31, tzinfo=UTC)  # past KERNELRANK_CLOSE_WAIT_S (30 minutes)
    await tick_answering(scheduler, jobs, {"ada.py": result(10.0)})
    assert kinds(published) == [("close", "discord:news")]
    text = str(published[0].parts)
    assert "🥇" in text and "Ada" in text and "Bob" not in text


async def test_challenge_settings_are_checked_and_cancel_stops_everything(env) -> None:
    deps, jobs, clock, published, scheduler = env
    for args, words in [
        ({"leaderboards": "nope", "closes": "2026-11-25 18:00"}, "no leaderboard 'nope'"),
        ({"leaderboards": "vectoradd"}, "--closes"),
        ({"leaderboards": "vectoradd", "closes": "2026-11-20 18:00"}, "has passed"),
        ({"leaderboards": "vectoradd", "closes": "2026-11-25 18:00", "announce": "irc:x"}, "platform:channel"),
    ]:
        reply = await ask(deps, "boss", CommandKind.CHALLENGE_CREATE, title="W", **args)
        assert words in reply.parts[0].text, (args, reply.parts[0].text)
    await ask(
        deps,
        "boss",
        CommandKind.CHALLENGE_CREATE,
        title="W",
        leaderboards="vectoradd",
        closes="2026-11-25 18:00",
        announce="discord:news",
    )
    moved = await ask(deps, "boss", CommandKind.CHALLENGE_UPDATE, title="W", closes="2026-11-26 18:00")
    assert "2026-11-26 18:00" in moved.parts[0].text
    assert (await ask(deps, "boss", CommandKind.CHALLENGE_CANCEL, title="W")).data["state"] == "cancelled"
    clock.now = datetime(2026, 12, 1, tzinfo=UTC)
    await scheduler.tick()
    assert published == [] and jobs == []


def test_the_verification_rule() -> None:
    run = RunResult("r", 0, "CPU", result(10.0))
    assert judge(run, (9.8, 10.2), 0.10)["verdict"] == "verified"
    assert judge(RunResult("r", 0, "CPU", result(11.2)), (9.8, 10.2), 0.10)["verdict"] == "verified"  # <= 11.22
    assert judge(RunResult("r", 0, "CPU", result(11.3)), (9.8, 10.2), 0.10)["verdict"] == "held"
    assert judge(RunResult("r", 0, "CPU", result(11.2)), (9.8, 10.2), 0.05)["verdict"] == "held"
    assert "no result in time" in judge(None, (9.8, 10.2), 0.1)["reason"]
    failed = EvalResult(
        status=Status.FAILED,
        mode=Mode.RANKED,
        problem="p",
        failure=Failure(kind=FailureKind.WRONG_OUTPUT, message="wrong on shape 2"),
    )
    assert "wrong on shape 2" in judge(RunResult("r", 0, "CPU", failed), (1, 2), 0.1)["reason"]
    entries = [
        {"rank": 1, "interval": [1.0, 2.0]},
        {"rank": 2, "interval": [1.5, 3.0]},
        {"rank": 3, "interval": [4, 5]},
    ]
    mark_ties(entries)
    assert [e["tie_with"] for e in entries] == [[2], [1], []]


async def test_a_podium_entry_whose_submission_is_gone_is_held_without_a_rerun(env) -> None:
    """A submission erased between the standings' read and its re-run (its leaderboard purged during the close)
    is not re-run and is held; the others are verified as usual."""
    deps, jobs, *_ = env
    ranked(deps, "ada", 10.0)
    board = await deps.boards.get("vectoradd")
    [ada] = await deps.db.read(deps.db.store.ranking, "vectoradd", "CPU")
    gone = dataclasses.replace(ada, rank=2, submission_id=ada.submission_id + 1000, run_id="run-gone")
    verifying = asyncio.create_task(verify(deps, board, "CPU", [ada, gone]))
    while not jobs and not verifying.done():
        await asyncio.sleep(0)
    [job] = jobs  # ada's re-run alone
    deps.reruns.arrived(RunResult(job.run_id, 0, job.gpu, result(10.0)))
    entries = await verifying
    assert [(e["rank"], e["verdict"]) for e in entries] == [(1, "verified"), (2, "held")]


async def test_a_deadline_set_before_challenges_existed_gets_its_challenge_at_the_start(env) -> None:
    deps, jobs, clock, published, scheduler = env
    store = deps.db.store
    lb = store.get_leaderboard("vectoradd")
    store.upsert_leaderboard(dataclasses.replace(lb, deadline=datetime(2026, 11, 24, 9, 0, tzinfo=UTC)))
    ranked(deps, "ada", 10.0)
    assert await adopt_deadlines(deps) == ["vectoradd"]
    assert await adopt_deadlines(deps) == []  # once: the next start finds it
    [own] = store.challenges.listed()
    assert (own.title, own.leaderboards, own.closes_at) == ("vectoradd", ["vectoradd"], lb_deadline(deps))
    clock.now = datetime(2026, 11, 24, 9, 0, 1, tzinfo=UTC)
    await tick_answering(scheduler, jobs, {"ada.py": result(10.0)})
    assert store.challenges.get("vectoradd").results["boards"][0]["podium"][0]["name"] == "Ada"

    past = dataclasses.replace(store.get_leaderboard("vectoradd"), name="old", deadline=T0)
    store.upsert_leaderboard(past)
    assert await adopt_deadlines(deps) == []  # a deadline already past was never a round here


def lb_deadline(deps: Deps) -> datetime:
    return deps.db.store.get_leaderboard("vectoradd").deadline


async def test_a_challenge_without_announce_goes_to_the_configured_channels_or_warns(env) -> None:
    deps, jobs, clock, published, scheduler = env
    unheard = await ask(
        deps, "boss", CommandKind.CHALLENGE_CREATE, title="Quiet", leaderboards="vectoradd", closes="2026-11-25 18:00"
    )
    assert "Nothing will be announced: give --announce" in unheard.parts[0].text
    await ask(deps, "boss", CommandKind.CHALLENGE_CANCEL, title="Quiet")
    deps.settings.announce = ["discord:news"]  # KERNELRANK_ANNOUNCE
    made = await ask(
        deps, "boss", CommandKind.CHALLENGE_CREATE, title="Heard", leaderboards="vectoradd", closes="2026-11-25 18:00"
    )
    assert "News goes to discord:news" in made.parts[0].text
    await scheduler.tick()
    assert kinds(published) == [("open", "discord:news")]


async def test_cancelling_frees_its_leaderboards_so_a_restart_crowns_nothing(env) -> None:
    deps, jobs, clock, published, scheduler = env
    await sprint(deps)
    cancelled = await ask(deps, "boss", CommandKind.CHALLENGE_CANCEL, title="Sprint")
    assert cancelled.data["leaderboards"] == ["vectoradd"] and "no deadline" in cancelled.parts[0].text
    [board] = (await ask(deps, "ada", CommandKind.LIST)).data["leaderboards"]
    assert board["deadline"] is None
    assert await adopt_deadlines(deps) == []  # a restarted core finds no deadline to make a challenge of
    clock.now = datetime(2026, 11, 24, 9, 1, tzinfo=UTC)
    await Scheduler(deps, scheduler.publish).tick()
    assert published == [] and [c.title for c in deps.db.store.challenges.listed()] == ["Sprint"]
