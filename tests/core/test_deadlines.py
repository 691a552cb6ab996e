"""A plain leaderboard's deadline, closed by the scheduler like a challenge: its own challenge follows every change to
the leaderboard, and its close verifies the podium and crowns the winner once, in the channel the admin used.
tests/e2e/test_leaderboard_admin.py runs the same on the real service, and tests/e2e/test_challenge_e2e.py across a
core killed at the deadline."""

from __future__ import annotations

from datetime import UTC, datetime

from test_challenges import ask, env, kinds, ranked, result, tick_answering

from core.contracts.messages import CommandKind
from core.service.scheduler import Scheduler

__all__ = ["env"]  # the fixture, shared with test_challenges


async def test_a_deadline_alone_is_closed_verified_and_crowned_once_in_the_admins_channel(env) -> None:
    deps, jobs, clock, published, scheduler = env
    ranked(deps, "ada", 10.0)
    set_ = await ask(deps, "boss", CommandKind.BOARD_UPDATE, leaderboard="vectoradd", deadline="2026-11-23 10:00")
    assert set_.data["leaderboard"] == "vectoradd", set_.parts
    [own] = (await ask(deps, "ada", CommandKind.CHALLENGES)).data["challenges"]
    assert (own["title"], own["state"], own["leaderboards"]) == ("vectoradd", "open", ["vectoradd"])
    await scheduler.tick()
    assert published == []  # open already: the command's answer said so, no news on top

    clock.now = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    await tick_answering(scheduler, jobs, {"ada.py": result(10.0)})
    assert kinds(published) == [("close", "discord:c1")]  # in the channel the command came from
    assert "🥇" in str(published[-1].parts) and "Ada" in str(published[-1].parts)
    await Scheduler(deps, scheduler.publish).tick()  # a restarted core's scheduler
    assert len(published) == 1
    shown = (await ask(deps, "ada", CommandKind.CHALLENGE, title="vectoradd")).data
    assert [(e["name"], e["verdict"]) for e in shown["results"]["boards"][0]["podium"]] == [("Ada", "verified")]
    assert "1 🥇" in str((await ask(deps, "ada", CommandKind.SHOW, leaderboard="vectoradd")).parts)


async def test_a_later_opening_is_announced_then_the_close(env) -> None:
    deps, jobs, clock, published, scheduler = env
    await ask(
        deps,
        "boss",
        CommandKind.BOARD_UPDATE,
        leaderboard="vectoradd",
        opens="2026-11-23 12:00",
        deadline="2026-11-24 12:00",
    )
    clock.now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    await scheduler.tick()
    assert kinds(published) == [("open", "discord:c1")] and "vectoradd is open" in published[0].title
    clock.now = datetime(2026, 11, 24, 11, 0, tzinfo=UTC)
    await scheduler.tick()
    clock.now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    await tick_answering(scheduler, jobs, {})  # nobody ranked: nothing to re-run
    assert [a for a, _ in kinds(published)] == ["open", "remind-1h", "close"]  # 24 h before is its opening


async def test_reopen_starts_a_new_round_and_an_admins_challenge_or_a_delete_takes_over(env) -> None:
    deps, jobs, clock, published, scheduler = env
    ranked(deps, "ada", 10.0)
    await ask(deps, "boss", CommandKind.BOARD_CLOSE, leaderboard="vectoradd")  # closing now crowns too
    await tick_answering(scheduler, jobs, {"ada.py": result(10.0)})
    assert kinds(published)[-1] == ("close", "discord:c1")
    await ask(deps, "boss", CommandKind.BOARD_REOPEN, leaderboard="vectoradd", deadline="2026-11-24 10:00")
    listed = {c["title"]: c["state"] for c in (await ask(deps, "ada", CommandKind.CHALLENGES)).data["challenges"]}
    assert listed == {"vectoradd (2026-11-23 09:00)": "closed", "vectoradd": "open"}  # the past round is kept

    await ask(
        deps, "boss", CommandKind.CHALLENGE_CREATE, title="Week 48", leaderboards="vectoradd", closes="2026-11-25 18:00"
    )
    listed = {c["title"] for c in (await ask(deps, "ada", CommandKind.CHALLENGES)).data["challenges"]}
    assert listed == {"vectoradd (2026-11-23 09:00)", "Week 48"}  # the admin's challenge crowns it now

    await ask(deps, "boss", CommandKind.CHALLENGE_CANCEL, title="Week 48")
    await ask(deps, "boss", CommandKind.BOARD_UPDATE, leaderboard="vectoradd", deadline="2026-11-26 10:00")
    assert (await ask(deps, "ada", CommandKind.CHALLENGE, title="vectoradd")).data["state"] == "open"
    await ask(deps, "boss", CommandKind.BOARD_DELETE, leaderboard="vectoradd", confirm="vectoradd")
    assert (await ask(deps, "ada", CommandKind.CHALLENGE, title="vectoradd")).data["state"] == "cancelled"


async def test_a_deadline_open_already_is_stored_with_its_opening_done_in_one_write(env) -> None:
    deps, jobs, clock, published, scheduler = env
    writes = []
    store = deps.db.store.challenges
    deps.db.store.challenges.done = lambda *a: writes.append(a)  # a separate "open" mark would show here
    await ask(deps, "boss", CommandKind.BOARD_UPDATE, leaderboard="vectoradd", deadline="2026-11-24 09:00")
    [own] = store.listed()
    assert own.done == frozenset({"open"}) and writes == []  # never seen by a tick without it
