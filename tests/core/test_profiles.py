"""Public queries: a visitor (no token) may read leaderboards, rankings and people, nothing else; ``person``'s data."""

from __future__ import annotations

from handler_kit import CORRECT, NOW, actor, ask

from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, CommandKind, Platform, ReplyTo
from core.service.handlers import dispatch
from harness.result import EvalResult, Mode, Status
from storage.records import ResultRecord

VISITOR = Actor(platform=Platform.WEB, user_id="")


async def visit(deps, kind: CommandKind, **args):
    return await dispatch(query_command(VISITOR, ReplyTo(Platform.WEB, "page"), kind, **args), deps)


async def test_a_visitor_reads_public_commands_only(deps) -> None:
    deps, _ = deps
    assert (await visit(deps, CommandKind.LIST)).data["leaderboards"][0]["name"] == "vectoradd"
    assert (await visit(deps, CommandKind.SHOW, leaderboard="vectoradd")).data["rankings"] == {"CPU": [], "H100": []}
    for kind in (CommandKind.MINE, CommandKind.SUBMISSION, CommandKind.TOKEN, CommandKind.LINK):
        assert (await visit(deps, kind, leaderboard="vectoradd", id="1")).data["error"] == "unauthenticated", kind
    forged = query_command(VISITOR, ReplyTo(Platform.WEB, "page"), CommandKind.LIST)
    forged.credential_sha256 = "0" * 64  # a bad token is refused, never taken as a visitor
    assert (await dispatch(forged, deps)).data["error"] == "unauthenticated"


async def test_person_shows_entries_with_ranks_progress_and_runs_as_plain_data(deps) -> None:
    deps, _ = deps
    accepted = await dispatch(
        submit_command(
            actor("ada"), ReplyTo(Platform.DISCORD, "c1"), "k.py", CORRECT, leaderboard="vectoradd", gpu=["CPU"]
        ),
        deps,
    )
    (run,) = accepted.data["runs"]
    result = EvalResult(status=Status.PASSED, mode=Mode.RANKED, problem="vectoradd", score_us=42.5)
    await deps.db.write(deps.db.store.record_results, [ResultRecord(run["run_id"], result, "w1", 1, NOW)])
    person_id = (await ask(deps, "ada", CommandKind.TOKEN, action="whoami")).data["person_id"]

    for who in (f"#{person_id}", "discord:ada"):
        page = await visit(deps, CommandKind.PERSON, who=who)
        assert page.data["name"] == "Ada" and page.data["bests"] == [
            {
                "leaderboard": "vectoradd",
                "gpu": "CPU",
                "rank": 1,
                "score_us": 42.5,
                "submission_id": accepted.data["submission_id"],
            }
        ]
        (progress,) = page.data["progress"]
        assert progress["points"][0][1] == 42.5 and progress["points"][0][0].startswith("20")
        assert page.data["runs"][0]["status"] == "passed" and "source" not in page.data["runs"][0]
    ranking = await visit(deps, CommandKind.SHOW, leaderboard="vectoradd", gpu="CPU")  # µs as numbers
    assert ranking.data["rankings"]["CPU"][0]["score_us"] == 42.5
    history = await ask(deps, "ada", CommandKind.HISTORY, leaderboard="vectoradd", gpu="CPU")
    assert history.data["best_over_time"]["CPU"][0][1] == 42.5
    assert (await ask(deps, "ada", CommandKind.MINE, leaderboard="vectoradd")).data["runs"][0]["score_us"] == 42.5
    missing = await visit(deps, CommandKind.PERSON, who="#999")
    assert missing.data["error"] == "not_found"
