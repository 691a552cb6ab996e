"""Each run is answered once and its state is never guessed: the core's side of at-least-once delivery.

In-process core (tests/e2e's ``make_system``): real NATS, real DuckDB, a worker with a counting fake runner.
"""

from __future__ import annotations

import asyncio
import collections
from datetime import UTC, datetime
from pathlib import Path

from fault_kit import CountingRunner

from core.contracts import signing, subjects
from core.contracts.bus import BusError
from core.contracts.credentials import result_secret
from core.contracts.messages import Reply, RunResult, encode
from harness.result import EvalResult, Failure, FailureKind, Mode, Status
from runners.fake import passed_result
from storage.records import ResultRecord

CORRECT = (Path(__file__).parents[1] / "fixtures" / "harness" / "submissions" / "correct.py").read_text()


def run_id_of(accepted: Reply) -> str:
    (run,) = accepted.data["runs"]
    return run["run_id"]


def run_key(system, run_id: str) -> str:
    """The key the core gave the first attempt of this run's job: a test playing its worker signs with it."""
    return signing.attempt_key(signing.run_key(result_secret(system.settings), run_id), 1)


def count_final_replies(system) -> collections.Counter[str]:
    """Wrap the core's ``publish_reply`` to count the final replies it sends per run (the stream's own
    duplicate window would hide a second one sent within 2 minutes)."""
    sent: collections.Counter[str] = collections.Counter()
    publish = system.service.bus.publish_reply

    async def counting(reply: Reply) -> None:
        if reply.final and reply.id.startswith("result-"):
            sent[reply.in_reply_to] += 1
        await publish(reply)

    system.service.bus.publish_reply = counting
    return sent


async def test_a_result_that_comes_again_is_not_answered_again(make_system):
    system = await make_system(CountingRunner())
    sent = count_final_replies(system)
    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    run_id = run_id_of(accepted)
    (first,) = (await system.finals({run_id})).values()
    # The same run's result again from the worker that ran it, past the stream's duplicate window (a new message
    # id), as a re-run or a redelivery after a long outage would bring it.
    (ran,) = system.store.submission_detail(accepted.data["submission_id"]).runs
    again = RunResult(
        run_id=run_id,
        submission_id=accepted.data["submission_id"],
        gpu="CPU",
        result=EvalResult(status=Status.FAILED, mode=Mode.RANKED, problem="vectoradd"),
        worker=ran.worker,
    )
    await system.bus._js.publish(
        subjects.result_subject(ran.worker, run_id),
        encode(signing.sign(again, run_key(system, run_id))),
        headers={"Nats-Msg-Id": "other"},
    )
    await asyncio.sleep(1.5)
    assert sent[run_id] == 1 and first.data["status"] == "passed"
    assert system.store.run(run_id).status == "passed"  # the first result stands


async def test_a_stored_result_whose_reply_never_went_out_is_answered_when_it_comes_again(make_system, eventually):
    """A core killed between storing a result and replying gets the result again (it was not acked)."""
    system = await make_system(CountingRunner(delay_s=30))  # holds the job: the test plays its worker
    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    run_id = run_id_of(accepted)

    async def started() -> bool:
        return system.service.runs.started_by(run_id) is not None

    await eventually(started)
    (_, worker) = system.service.runs.started_by(run_id)
    result = RunResult(
        run_id=run_id,
        submission_id=accepted.data["submission_id"],
        gpu="CPU",
        result=EvalResult(status=Status.FAILED, mode=Mode.RANKED, problem="vectoradd"),
        worker=worker,
    )
    stored = await system.service.writer.results([_record(result)])  # stored, and then "the crash"
    assert stored.stored == [True] and system.store.unreplied([run_id]) == {run_id}
    await system.bus.publish_result(result, run_key(system, run_id))
    (reply,) = (await system.finals({run_id})).values()
    assert reply.data["status"] == "failed"
    await system.service.writer.close()  # the note rides along; close writes what waits
    assert system.store.unreplied([run_id]) == set()


async def test_a_started_run_is_marked_running_before_its_start_is_acknowledged(make_system):
    runner = CountingRunner(delay_s=30)
    system = await make_system(runner)
    run_id = run_id_of(await system.submit("ada", CORRECT, leaderboard="vectoradd"))
    deadline = asyncio.get_running_loop().time() + 20
    while system.store.run(run_id).state != "running":  # written by the progress consumer, nothing else
        assert asyncio.get_running_loop().time() < deadline, "the running mark was never stored"
        await asyncio.sleep(0.05)
    assert runner.evaluations[run_id] == 1


async def test_a_result_larger_than_nats_carries_is_cut_at_the_source_and_answered_once(make_system):
    def huge_exception(job):
        result = passed_result(job)
        result.status = Status.FAILED
        result.failure = Failure(
            kind=FailureKind.EXCEPTION,
            message="ValueError: " + "x" * (5 << 20),
            log_tail="Traceback (most recent call last):\n" + "  frame\n" * 400_000,
        )
        result.stdout = "y" * (3 << 20)
        return result

    runner = CountingRunner(result_for=huge_exception)
    system = await make_system(runner)
    sent = count_final_replies(system)
    run_id = run_id_of(await system.submit("ada", CORRECT, leaderboard="vectoradd"))
    (reply,) = (await system.finals({run_id})).values()
    await asyncio.sleep(1.0)
    assert runner.evaluations[run_id] == 1 and sent[run_id] == 1
    assert reply.data["status"] == "failed"
    stored = system.store.submission_detail(system.store.run(run_id).submission_id)
    failure = stored.runs[0].result["failure"]
    assert failure["kind"] == "exception" and failure["message"].startswith("ValueError: xxx")
    assert "characters cut to fit the message limit" in failure["message"]


def _record(result: RunResult) -> ResultRecord:
    return ResultRecord(
        run_id=result.run_id, result=result.result, worker=result.worker, attempts=1, finished_at=datetime.now(UTC)
    )


async def test_a_reply_that_could_not_be_sent_is_sent_when_the_result_comes_back(make_system):
    system = await make_system(CountingRunner())
    sent = count_final_replies(system)
    counting = system.service.bus.publish_reply
    failures = []

    async def failing_once(reply: Reply) -> None:
        if reply.final and not failures:
            failures.append(reply.in_reply_to)
            raise BusError("cannot publish: NATS did not answer in time")  # the batch is given back
        await counting(reply)

    system.service.bus.publish_reply = failing_once
    run_id = run_id_of(await system.submit("ada", CORRECT, leaderboard="vectoradd"))
    (reply,) = (await system.finals({run_id})).values()
    assert failures == [run_id] and sent[run_id] == 1 and reply.data["status"] == "passed"
