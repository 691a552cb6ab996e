"""The service end to end on one loop: commands in, runs through the queue and a worker, replies out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.contracts.commands import submit_command
from core.contracts.messages import CommandKind, PartKind, Platform, ReplyTo, RunJob, Tone
from harness.job import EvalJob
from harness.loading import load_problem
from harness.result import EvalResult, Mode, Status
from runners.fake import FakeRunner, passed_result

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"

CORRECT = (FIXTURES / "submissions" / "correct.py").read_text()
WRONG = (FIXTURES / "submissions" / "wrong_output.py").read_text()


def texts(reply) -> str:
    return "\n".join([p.text for p in reply.parts] + [" ".join(r) for p in reply.parts for r in p.rows])


def run_ids(accepted) -> set[str]:
    assert accepted.tone is not Tone.ERROR, texts(accepted)
    return {run["run_id"] for run in accepted.data["runs"]}


@pytest.mark.slow
async def test_correct_and_wrong_kernels_through_the_real_harness(local_runner, make_system):
    system = await make_system(local_runner)
    good = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    bad = await system.submit("bob", WRONG, leaderboard="vectoradd", mode="test")
    finals = await system.finals(run_ids(good) | run_ids(bad), timeout_s=120)

    (good_reply,) = [finals[r] for r in run_ids(good)]
    assert good_reply.data["status"] == "passed" and good_reply.data["score_us"] > 0
    assert "New #1!" in texts(good_reply)
    assert not any(p.kind is PartKind.TABLE for p in good_reply.parts)  # in chat the figures are private
    mine = await system.ask("ada", CommandKind.SUBMISSION, id=str(good.data["submission_id"]))
    assert any(p.kind is PartKind.TABLE and "median" in p.headers for p in mine.parts)
    (bad_reply,) = [finals[r] for r in run_ids(bad)]
    assert bad_reply.data["status"] == "failed" and bad_reply.tone is Tone.ERROR

    board = await system.ask("ada", CommandKind.SHOW, leaderboard="vectoradd")
    assert "Ada" in texts(board) and "Bob" not in texts(board)


async def test_bad_submissions_get_one_clear_error_and_nothing_is_stored(make_system):
    system = await make_system(FakeRunner(), rate_limit=2, max_source_bytes=4096)
    cases = [
        (dict(source="x = 1\n" * 2000), "limit is 4 KiB"),
        (dict(source=CORRECT, leaderboard="nope"), "no leaderboard 'nope'"),
        (dict(source=CORRECT, leaderboard="vectoradd", gpu=["H100"]), "does not offer H100"),
        (dict(source=CORRECT, leaderboard="vectoradd", mode="turbo"), "Unknown mode"),
        (dict(source=CORRECT, file_name="k.txt", leaderboard="vectoradd"), "not a kernel file"),
        (dict(source=CORRECT), "Name a leaderboard"),
    ]
    for kwargs, words in cases:
        reply = await system.submit("eve", **kwargs)
        assert reply.tone is Tone.ERROR, kwargs
        if words:
            assert words in texts(reply)
        assert len(reply.parts) == 1 and reply.parts[0].text.endswith((".", ")"))

    not_utf8 = await system.bus.request(
        submit_command(
            system.actor("eve"), ReplyTo(Platform.DISCORD, "e2e"), "k.py", b"\xff\xfe\x00", leaderboard="vectoradd"
        )
    )
    assert "not UTF-8" in texts(not_utf8)
    assert system.store.stats().submissions == 0

    for _ in range(2):
        assert (await system.submit("eve", CORRECT, leaderboard="vectoradd")).tone is not Tone.ERROR
    limited = await system.submit("eve", CORRECT, leaderboard="vectoradd")
    assert limited.tone is Tone.ERROR and "in the last minute" in texts(limited)
    assert system.store.stats().submissions == 2


def scored(job) -> EvalResult:
    """Score from a ``# score=N`` line, so a test decides who is faster."""
    result = passed_result(job)
    result.score_us = float(re.search(r"# score=([\d.]+)", job.submission_source).group(1))
    return result


async def test_show_ranks_best_per_person_with_ties_broken_by_time(make_system):
    system = await make_system(FakeRunner(result_for=scored))
    runs = set()
    for user, score in [("ada", 30), ("bob", 20), ("ada", 10), ("cy", 20), ("bob", 40)]:
        runs |= run_ids(await system.submit(user, f"{CORRECT}# score={score}\n", leaderboard="vectoradd"))
        await system.finals(runs)  # one at a time, so submission order is time order
    board = await system.ask("zed", CommandKind.SHOW, leaderboard="vectoradd")
    (table,) = [p for p in board.parts if p.kind is PartKind.TABLE]
    assert [(row[0], row[1], row[2]) for row in table.rows] == [
        ("1", "Ada", "10 µs"),
        ("2", "Bob", "20 µs"),
        ("3", "Cy", "20 µs"),
    ]


async def test_show_pages_the_ranking_and_adds_the_askers_own_entry(make_system):
    system = await make_system(FakeRunner(result_for=scored))
    runs = set()
    for user, score in [("ada", 10), ("bob", 20), ("cy", 30)]:
        runs |= run_ids(await system.submit(user, f"{CORRECT}# score={score}\n", leaderboard="vectoradd"))
    await system.finals(runs)
    second = await system.ask("zed", CommandKind.SHOW, leaderboard="vectoradd", gpu="CPU", limit="1", page="2")
    assert [(r["rank"], r["name"]) for r in second.data["rankings"]["CPU"]] == [(2, "Bob")]
    assert second.data["page"] == 2 and second.data["more"] == {"CPU": True}
    assert "`show vectoradd --gpu CPU --page 3` shows the next 1 (ranks 3-3)." in texts(second)
    last = await system.ask("zed", CommandKind.SHOW, leaderboard="vectoradd", gpu="CPU", limit="2", page="2")
    assert [r["name"] for r in last.data["rankings"]["CPU"]] == ["Cy"] and last.data["more"] == {"CPU": False}
    mine = await system.ask("cy", CommandKind.SHOW, leaderboard="vectoradd", gpu="CPU", limit="1")
    assert [(r["rank"], r["name"], r["you"]) for r in mine.data["rankings"]["CPU"]] == [
        (1, "Ada", False),
        (3, "Cy", True),
    ]
    refused = await system.ask("zed", CommandKind.SHOW, leaderboard="vectoradd", page="0")
    assert refused.tone is Tone.ERROR and "page as a number from 1" in texts(refused)


async def test_a_repeated_command_is_one_submission_and_one_run(make_system):
    runner = FakeRunner()
    system = await make_system(runner)
    cmd = submit_command(
        system.actor("ada"), ReplyTo(Platform.DISCORD, system.route), "k.py", CORRECT.encode(), leaderboard="vectoradd"
    )
    first = await system.bus.request(cmd)
    second = await system.bus.request(cmd)
    assert first.data == second.data
    await system.finals(run_ids(first))
    assert system.store.stats().submissions == 1 and runner.runs == 1


async def test_queries_answer_from_the_store(make_system):
    system = await make_system(FakeRunner())
    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd", mode="ranked")
    await system.finals(run_ids(accepted))
    sub_id = accepted.data["submission_id"]

    listing = await system.ask("ada", CommandKind.LIST)
    assert "vectoradd" in texts(listing) and "CPU" in texts(listing)
    assert "Add two fp32 vectors" in texts(await system.ask("ada", CommandKind.TASK, leaderboard="vectoradd"))
    mine = await system.ask("ada", CommandKind.MINE, leaderboard="vectoradd")
    assert f"#{sub_id}" in texts(mine) and "passed" in texts(mine)
    history = await system.ask("ada", CommandKind.HISTORY, leaderboard="vectoradd")
    assert "best on CPU" in texts(history)
    detail = await system.ask("ada", CommandKind.SUBMISSION, id=str(sub_id))
    assert "torch.add" in texts(detail)
    missing = await system.ask("ada", CommandKind.SUBMISSION, id="999")
    assert missing.tone is Tone.ERROR and "no submission #999" in texts(missing)
    assert (await system.ask("ada", CommandKind.STATS)).tone is not Tone.ERROR


async def test_a_failing_result_reaches_the_user(make_system):
    def broken(job):
        return EvalResult(status=Status.ERROR, mode=Mode.RANKED, problem=job.problem.name)

    system = await make_system(FakeRunner(result_for=broken))
    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    (reply,) = (await system.finals(run_ids(accepted))).values()
    assert reply.data["status"] == "error" and "could not run" in texts(reply)


async def test_a_dead_lettered_run_is_stored_as_failed_and_the_user_is_told(make_system):
    """What the core does when the dead-letter watcher gives up on a job (the bus tests cover the watcher)."""
    system = await make_system(FakeRunner(delay_s=30))  # the worker holds the job; the core gives up on it
    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    (run,) = accepted.data["runs"]
    stored = system.store.run(run["run_id"])
    job = RunJob(
        run_id=run["run_id"],
        submission_id=accepted.data["submission_id"],
        leaderboard="vectoradd",
        gpu=run["gpu"],
        job=EvalJob(
            problem=load_problem(FIXTURES / "vectoradd"),
            submission_name="k.py",
            submission_source=CORRECT,
            mode=Mode.RANKED,
        ),
    )
    assert stored is not None and stored.state != "done"
    await system.service._on_dead(job, 3)
    (reply,) = (await system.finals({run["run_id"]})).values()
    assert reply.data["status"] == "error" and "could not run" in texts(reply)
    told = await system.ask("ada", CommandKind.SUBMISSION, id=str(accepted.data["submission_id"]))  # the why
    assert "failed 3 times" in texts(told)
    assert system.store.run(run["run_id"]).status == "error"


async def test_a_waiting_run_hears_its_place_when_the_runs_ahead_start_and_end(make_system):
    system = await make_system(FakeRunner(delay_s=1.0))  # a worker of two slots: the third run waits
    sent = [await system.submit(user, CORRECT, leaderboard="vectoradd", mode="test") for user in ("ada", "bob", "cy")]
    [waiting] = [run["run_id"] for run in sent[-1].data["runs"]]
    heard = await system._first_of_each({waiting}, lambda reply: "CPU: queued" in str(reply.parts), 60)
    assert not heard[waiting].final and heard[waiting].update_key == waiting  # it updates the status line
    assert "ahead" in heard[waiting].parts[0].text, heard[waiting].parts
    await system.finals({run["run_id"] for accepted in sent for run in accepted.data["runs"]}, 60)
