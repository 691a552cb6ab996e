"""Core features the chat adapters rely on, through the real core: queue, eval-code, announcements, files."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from core.contracts.bus import Bus
from core.contracts.commands import query_command
from core.contracts.messages import CommandKind, PartKind, Platform, Reply, ReplyTo, Tone
from harness.result import ShapeStats
from runners.fake import FakeRunner, passed_result

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"
CORRECT = (FIXTURES / "submissions" / "correct.py").read_text()


def run_ids(accepted: Reply) -> set[str]:
    assert accepted.tone is not Tone.ERROR, accepted.parts
    return {run["run_id"] for run in accepted.data["runs"]}


async def test_submit_says_how_many_jobs_are_ahead_and_queue_shows_positions(make_system):
    system = await make_system(FakeRunner(delay_s=30))  # the worker holds two jobs, says so; the rest wait
    replies = [await system.submit(user, CORRECT, leaderboard="vectoradd") for user in ("ada", "bob", "cy", "ada")]
    assert [r.data["runs"][0]["ahead"] for r in replies] == [0, 1, 2, 3]
    assert "queued as #1 on CPU, nothing ahead" in replies[0].parts[0].text
    assert "queued as #4 on CPU, 3 jobs ahead" in replies[3].parts[0].text

    async def started_and_reported() -> Reply:
        while True:
            reply = await system.ask("ada", CommandKind.QUEUE)
            pool = reply.data["pools"].get("CPU", {})
            if pool.get("running") == 2 and pool.get("workers") == 1:
                return reply
            await asyncio.sleep(0.1)

    queue = await asyncio.wait_for(started_and_reported(), 20)
    assert queue.data["pools"]["CPU"]["waiting"] == 2
    mine = {m["submission_id"]: m for m in queue.data["mine"]}
    assert mine[1]["running"] and not mine[4]["running"] and mine[4]["position"] == 2
    assert "waiting, position 2 (1 ahead)" in "\n".join(" ".join(r) for p in queue.parts for r in p.rows)


async def test_eval_code_task_template_and_submission_carry_files(make_system):
    system = await make_system(FakeRunner())
    code = await system.ask("ada", CommandKind.EVAL_CODE)
    files = [p.filename for p in code.parts if p.kind is PartKind.CODE]
    assert "harness/timing.py" in files and files == code.data["files"]

    task = await system.ask("ada", CommandKind.TASK, leaderboard="vectoradd")
    assert {"reference.py", "task.py"} <= {p.filename for p in task.parts if p.kind is PartKind.CODE}

    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd", file_name="mine.py")
    await system.finals(run_ids(accepted))
    detail = await system.ask("ada", CommandKind.SUBMISSION, id=str(accepted.data["submission_id"]))
    assert [p.filename for p in detail.parts if p.kind is PartKind.CODE] == ["mine.py"]

    listing = await system.ask("ada", CommandKind.LIST)
    assert listing.data["leaderboards"] == [
        {
            "name": "vectoradd",
            "gpus": ["CPU"],
            "deadline": None,
            "opens": None,
            "version": 1,
            "about": "Add two fp32 vectors into the output buffer that comes with the input.",
            "submissions": 1,
            "people": 1,
        }
    ]


async def test_history_of_another_person_on_the_same_platform(make_system):
    system = await make_system(FakeRunner())
    await system.finals(run_ids(await system.submit("bob", CORRECT, leaderboard="vectoradd")))
    theirs = await system.bus.request(
        query_command(
            system.actor("ada"),
            ReplyTo(Platform.DISCORD, system.route),
            CommandKind.HISTORY,
            leaderboard="vectoradd",
            user="bob",
            user_name="Bob",
        )
    )
    assert theirs.title == "Bob's progress on vectoradd"
    assert any(p.kind is PartKind.CHART for p in theirs.parts)
    mine = await system.ask("ada", CommandKind.HISTORY, leaderboard="vectoradd")
    assert mine.title == "Your progress on vectoradd" and not any(p.kind is PartKind.CHART for p in mine.parts)


async def test_a_new_top_3_entry_is_announced_on_each_configured_channel(make_system, nats_url):
    system = await make_system(FakeRunner(), announce=["discord:555", "slack:C1"])
    listener = await Bus.connect(nats_url, name="listener")
    try:
        await system.finals(run_ids(await system.submit("ada", CORRECT, leaderboard="vectoradd")))
        await system.finals(run_ids(await system.submit("bob", CORRECT, leaderboard="vectoradd", mode="test")))

        async def first(platform: Platform, channel: str) -> Reply:
            async for reply in listener.follow_replies(channel, platform):
                return reply
            raise AssertionError("no announcement")

        discord = await asyncio.wait_for(first(Platform.DISCORD, "555"), 10)
        slack = await asyncio.wait_for(first(Platform.SLACK, "C1"), 10)
    finally:
        await listener.close()
    assert discord.data["kind"] == slack.data["kind"] == "announcement"
    assert discord.data["top"][0][1] == "Ada" and len(discord.data["top"]) == 1  # the test run is not ranked


async def test_a_ranked_report_compares_each_shape_with_the_authors_previous_best(make_system):
    def timed(job):
        """Two shapes whose medians follow a ``# score=N`` line in the source."""
        result = passed_result(job)
        score = float(re.search(r"# score=([\d.]+)", job.submission_source).group(1))
        result.score_us = score
        result.shapes = [
            ShapeStats(
                spec={"size": size},
                n=10,
                median_us=score * k,
                mean_us=score * k,
                trimmed_mean_us=score * k,
                std_us=0.1,
                ci_low_us=score * k,
                ci_high_us=score * k,
                min_us=score * k,
                p10_us=score * k,
                p90_us=score * k,
                max_us=score * k,
                first_call_us=score * k,
            )
            for k, size in ((1, 4096), (2, 16384))
        ]
        return result

    system = await make_system(FakeRunner(result_for=timed))
    first = await system.submit("ada", f"{CORRECT}# score=20\n", leaderboard="vectoradd")
    (report,) = (await system.details(run_ids(first))).values()
    assert "Against your previous best" not in "\n".join(p.text for p in report.parts)  # nothing to compare yet
    second = await system.submit("ada", f"{CORRECT}# score=10\n", leaderboard="vectoradd")
    (report,) = (await system.details(run_ids(second))).values()
    tables = [p for p in report.parts if p.kind is PartKind.TABLE]
    (changes,) = [t for t in tables if t.headers[0] == "shape" and "change" in t.headers]
    assert changes.headers[2] == f"your best before (#{first.data['submission_id']})"
    assert [row[3] for row in changes.rows] == ["-50.0%", "-50.0%"] and changes.rows[0][0] == "size=4096"
    # a slower run is compared with the best, which is still the second one
    third = await system.submit("ada", f"{CORRECT}# score=30\n", leaderboard="vectoradd")
    (report,) = (await system.details(run_ids(third))).values()
    (changes,) = [p for p in report.parts if p.kind is PartKind.TABLE and "change" in p.headers]
    assert changes.headers[2] == f"your best before (#{second.data['submission_id']})"
