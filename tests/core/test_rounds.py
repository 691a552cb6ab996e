"""A leaderboard's rounds (issue 27, item 6): reopened after an admin's challenge crowned it, it ranks and crowns only
its new round, and the past round stays readable. Called directly, on a DuckDB file, as tests/core/test_challenges.py
does (its fixture and helpers)."""

from __future__ import annotations

from datetime import UTC, datetime

from core.contracts.messages import CommandKind
from core.service import rounds
from core.service.deps import Deps
from storage.records import ResultRecord, RunInfo
from tests.core.test_challenges import ask, env, result, sprint, tick_answering
from tests.core.test_challenges import sent as submitted

__all__ = ["env"]  # the fixture


def sent(deps: Deps, user: str, round_: int, score_us: float, at: datetime) -> None:
    """``user``'s ranked run on vectoradd in round ``round_``, sent at ``at``, with its result."""
    name = f"{user}-{round_}"
    submitted(deps, user, name, at)
    deps.db.store.record_results(
        [ResultRecord(run_id=f"run-{name}", result=result(score_us), worker="w", attempts=1, finished_at=at)]
    )


def _ranked_run(run_id: str, person_id: int, created_at: datetime) -> RunInfo:
    return RunInfo(run_id, 0, "CPU", "done", "passed", 11.5, "vectoradd", person_id, "", "ranked", {}, created_at)


async def shown(deps: Deps, **args) -> list[tuple[str, float, str | None]]:
    reply = await ask(deps, "eve", CommandKind.SHOW, leaderboard="vectoradd", **args)
    assert "error" not in reply.data, reply.parts
    return [(r["name"], r["score_us"], r["podium"]) for r in reply.data["rankings"]["CPU"]]


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_a_board_reopened_by_a_new_challenge_ranks_and_crowns_only_its_new_round(env) -> None:
    deps, jobs, clock, _, scheduler = env
    await sprint(deps)  # an admin's challenge, open now (2026-11-23 09:00) until 2026-11-24 09:00
    sent(deps, "ada", 1, 10.0, at("2026-11-23 10:00"))
    sent(deps, "bob", 1, 12.0, at("2026-11-23 11:00"))
    clock.now = at("2026-11-24 09:00:05")
    every_rerun = {f"{user}-{n}.py": result(score) for user, n, score in RUNS}
    await tick_answering(scheduler, jobs, every_rerun)
    assert await shown(deps) == [("Ada", 10.0, "🥇"), ("Bob", 12.0, "🥈")]  # crowned: still its round until reopened

    clock.now = at("2026-11-24 12:00")
    made = await ask(
        deps,
        "boss",
        CommandKind.CHALLENGE_CREATE,
        title="Sprint 2",
        leaderboards="vectoradd",
        closes="2026-11-26 09:00",
    )
    assert made.data == {"challenge": "Sprint 2"}, made.parts
    assert await shown(deps) == []  # the new round has no entries yet: Ada's 10 µs is the past round's
    sent(deps, "cy", 2, 11.0, at("2026-11-24 13:00"))
    sent(deps, "bob", 2, 11.5, at("2026-11-24 14:00"))

    current = await ask(deps, "eve", CommandKind.SHOW, leaderboard="vectoradd")
    assert current.data["round"] == "round 2 of 2, from 2026-11-24 12:00 UTC"
    assert await shown(deps) == [("Cy", 11.0, None), ("Bob", 11.5, None)]
    standings = (await ask(deps, "eve", CommandKind.CHALLENGE, title="Sprint 2")).data["standings"]
    assert [row["name"] for row in standings[0]["rows"]] == ["Cy", "Bob"]
    assert await shown(deps, round="1") == [("Ada", 10.0, "🥇"), ("Bob", 12.0, "🥈")]  # the past round, on request
    bob = deps.db.store.person("discord", "bob", "Bob")
    replied = await rounds.standings(deps, [_ranked_run("run-bob-2", bob, at("2026-11-24 14:00"))], 3)
    assert [(r.display_name, r.rank) for r in sorted(replied[("vectoradd", "CPU")].values(), key=lambda r: r.rank)] == [
        ("Cy", 1),
        ("Bob", 2),
    ]  # Bob's result reply and the announcement rank the new round: Ada's 10 µs is the past round's
    assert await shown(deps, round="all") == [("Ada", 10.0, "🥇"), ("Cy", 11.0, None), ("Bob", 11.5, None)]
    refused = await ask(deps, "eve", CommandKind.SHOW, leaderboard="vectoradd", round="3")
    assert "rounds 1 to 2" in str(refused.parts), refused.parts

    clock.now = at("2026-11-26 09:00:05")
    await tick_answering(scheduler, jobs, every_rerun)
    [board] = (await ask(deps, "eve", CommandKind.CHALLENGE, title="Sprint 2")).data["results"]["boards"]
    assert [(e["name"], e["verdict"]) for e in board["podium"]] == [("Cy", "verified"), ("Bob", "verified")]
    assert [e["name"] for e in board["frozen"]] == ["Cy", "Bob"]  # Ada's past entry is not crowned again
    [past] = (await ask(deps, "eve", CommandKind.CHALLENGE, title="Sprint")).data["results"]["boards"]
    assert [e["name"] for e in past["podium"]] == ["Ada", "Bob"]
    assert await shown(deps, round="1") == [("Ada", 10.0, "🥇"), ("Bob", 12.0, "🥈")]


RUNS = (("ada", 1, 10.0), ("bob", 1, 12.0), ("cy", 2, 11.0), ("bob", 2, 11.5))


async def test_an_admin_reopening_a_board_an_admins_challenge_crowned_starts_a_round(env) -> None:
    deps, jobs, clock, _, scheduler = env
    await sprint(deps)
    sent(deps, "ada", 1, 10.0, at("2026-11-23 10:00"))
    clock.now = at("2026-11-24 09:00:05")
    await tick_answering(scheduler, jobs, {"ada-1.py": result(10.0)})

    clock.now = at("2026-11-24 12:00")
    await ask(deps, "boss", CommandKind.BOARD_REOPEN, leaderboard="vectoradd", deadline="2026-11-25 12:00")
    sent(deps, "bob", 2, 12.0, at("2026-11-24 13:00"))
    assert await shown(deps) == [("Bob", 12.0, None)]
    assert await shown(deps, round="1") == [("Ada", 10.0, "🥇")]
    rounds = deps.db.store.challenges.round_starts
    assert rounds("vectoradd") == [at("2026-11-24 12:00")]
    clock.now = at("2026-11-24 15:00")
    await ask(deps, "boss", CommandKind.BOARD_UPDATE, leaderboard="vectoradd", description="Add, faster.")
    assert rounds("vectoradd") == [at("2026-11-24 12:00")]  # a later change splits no round
    deps.db.store._con.execute("UPDATE rounds SET started_at = ?", [at("2026-11-24 09:00")])  # as migrated: the close
    deps.db.store.challenges.remember()  # the store's copy, as a restart reads the file
    await ask(deps, "boss", CommandKind.BOARD_UPDATE, leaderboard="vectoradd", description="Add, fastest.")
    assert rounds("vectoradd") == [at("2026-11-24 09:00")]
    clock.now = at("2026-11-25 12:00:05")  # its own challenge closes the new round
    jobs.clear()  # the first close's re-runs, answered already
    await tick_answering(scheduler, jobs, {"bob-2.py": result(12.0)})
    [board] = (await ask(deps, "eve", CommandKind.CHALLENGE, title="vectoradd")).data["results"]["boards"]
    assert [e["name"] for e in board["podium"]] == ["Bob"]
