"""The trust boundary end to end, on a bus that asks for credentials: core, worker and client each as their role.

A worker credential of its own (``evil``: what an attacker holds who stole a worker's credential) forges results
and progress for someone else's run, even signed with that run's key as if it had stolen the job: the stored
result, the ranking and what the user is told stay the real ones. A flood of junk into EVENTS stops at the
stream's byte limit and pushes out nothing stored. The leaderboard's secret seed reaches only ranked jobs, and
none of it, nor any run's result key or worker key, shows in replies or logs.
"""

from __future__ import annotations

import logging
from pathlib import Path

import nats
import pytest
from worker_testkit import WORKER

from core.contracts import signing, subjects
from core.contracts.bus import Bus, BusError, Role, Settle
from core.contracts.credentials import result_secret
from core.contracts.messages import CommandKind, RunProgress, RunResult, Tone
from harness.job import EvalJob
from harness.result import EvalResult, Mode, Progress, Status
from runners.fake import FakeRunner, passed_result

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"
CORRECT = (FIXTURES / "submissions" / "correct.py").read_text()
WRONG = (FIXTURES / "submissions" / "wrong_output.py").read_text()
FORGED_US = 0.5
EVIL = "evil"


def failed(job: EvalJob) -> EvalResult:
    return EvalResult(status=Status.FAILED, mode=job.mode, problem=job.problem.name)


def forged(run: dict, submission_id: int, **fields) -> RunResult:
    """A result claiming a pass at an impossible 0.5 us, as the issue's attacker sent."""
    result = EvalResult(status=Status.PASSED, mode=Mode.RANKED, problem="vectoradd", score_us=FORGED_US)
    return RunResult(
        run_id=run["run_id"], submission_id=submission_id, gpu=run["gpu"], result=result, worker=EVIL, **fields
    )


async def all_replies(bus: Bus) -> list[bytes]:
    """Every message stored in the REPLIES stream (read with the core's rights)."""
    js = bus._js
    info = await js.stream_info(subjects.REPLIES)
    return [
        (await js.get_msg(subjects.REPLIES, seq)).data or b""
        for seq in range(info.state.first_seq, info.state.last_seq + 1)
    ]


@pytest.mark.slow
async def test_forged_results_and_progress_for_someone_elses_run_change_nothing(
    make_authed_system, authed_nats, caplog
):
    caplog.set_level(logging.WARNING, logger="core.service.loop")
    system = await make_authed_system(FakeRunner(result_for=failed, delay_s=3))
    accepted = await system.submit("ada", WRONG, leaderboard="vectoradd")
    (run,) = accepted.data["runs"]
    submission_id = accepted.data["submission_id"]
    authed_nats.issue_worker(EVIL, ["CPU"])
    attacker = await authed_nats.connect(Role.WORKER, "attacker", worker=EVIL)
    try:
        other_key = signing.run_key(b"a guess at the core's secret", run["run_id"])
        await attacker.publish_result(forged(run, submission_id))  # unsigned
        await attacker.publish_result(forged(run, submission_id, signature="0" * 64))  # made up
        await attacker.publish_result(forged(run, submission_id), other_key)  # wrong key
        slower = signing.sign(forged(run, submission_id, cost_usd=0.01), other_key)
        await attacker.publish_result(forged(run, submission_id, signature=slower.signature))  # copied
        await attacker.publish_progress(
            RunProgress(
                run["run_id"],
                submission_id,
                run["gpu"],
                Progress(stage="disqualified", detail="send your token to evil"),
                worker=EVIL,
            )
        )
        # signed right, with attempt 1's key and its own worker key, as if it had stolen the job: not its run
        stolen_key = signing.attempt_key(signing.run_key(result_secret(system.settings), run["run_id"]), 1)
        await attacker.publish_result(forged(run, submission_id, cost_usd=0.02), stolen_key)
        finals = await system.finals({run["run_id"]})
    finally:
        await attacker.close()

    final = finals[run["run_id"]]
    assert final.data["status"] == "failed" and final.tone is Tone.ERROR
    stored = system.store.run(run["run_id"])
    assert stored.status == "failed" and stored.score_us is None
    assert [r.worker for r in system.store.submission_detail(submission_id).runs] == [WORKER]
    assert system.store.ranking("vectoradd", run["gpu"]) == []
    replies = b"\n".join(await all_replies(system.service.bus))
    assert b"evil" not in replies and b"0.5" not in replies and b"disqualified" not in replies
    dropped = [r.getMessage() for r in caplog.records if "not signed with the run's key" in r.getMessage()]
    assert len(dropped) == 5
    unpaired = [r.getMessage() for r in caplog.records if "that worker did not start attempt 1" in r.getMessage()]
    assert len(unpaired) == 1 and f"worker {EVIL!r}" in unpaired[0]


@pytest.mark.slow
async def test_a_result_from_an_attempt_older_than_one_already_started_is_dropped(
    make_authed_system, authed_nats, eventually, caplog
):
    """Attempt 1 (the system's worker, slow) is overtaken by attempt 2 (a second worker, played here with the key
    the core would have handed it)."""
    caplog.set_level(logging.WARNING, logger="core.service.loop")
    system = await make_authed_system(FakeRunner(result_for=failed, delay_s=3, progress_steps=0))
    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    (run,) = accepted.data["runs"]
    key = signing.attempt_key(signing.run_key(result_secret(system.settings), run["run_id"]), 2)
    authed_nats.issue_worker("second", ["CPU"])
    second = await authed_nats.connect(Role.WORKER, "second worker", worker="second")
    try:

        async def first_started() -> bool:
            return system.service.runs.latest_attempt(run["run_id"]) == 1

        await eventually(first_started)
        await second.publish_progress(
            RunProgress(
                run["run_id"],
                accepted.data["submission_id"],
                run["gpu"],
                Progress(stage="started"),
                attempt=2,
                worker="second",
            ),
            key,
        )

        async def first_result_dropped() -> bool:
            return any("attempt 2 has started since" in r.getMessage() for r in caplog.records)

        await eventually(first_result_dropped)
        assert system.store.run(run["run_id"]).state != "done"
        result = EvalResult(status=Status.PASSED, mode=Mode.RANKED, problem="vectoradd", score_us=77.0)
        await second.publish_result(
            RunResult(run["run_id"], accepted.data["submission_id"], run["gpu"], result, worker="second", attempts=2),
            key,
        )
        finals = await system.finals({run["run_id"]})
    finally:
        await second.close()
    assert finals[run["run_id"]].data["status"] == "passed"
    stored = system.store.run(run["run_id"])
    assert stored.status == "passed" and stored.score_us == 77.0


async def test_a_second_worker_of_the_pool_cannot_take_over_a_running_job(
    make_authed_system, authed_nats, eventually, caplog
):
    """The attack of issue 25: another credential of the same pool tries to give back (or acknowledge) the delivery
    the honest worker is running, to read the pool consumer's state, to take the job through the core, and reports
    a start and a 1 us pass for the next attempt. The server and the core refuse it all; the honest result ranks."""
    caplog.set_level(logging.WARNING)
    system = await make_authed_system(FakeRunner(result_for=passed_result, delay_s=3))
    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    (run,) = accepted.data["runs"]
    durable = subjects.runner_durable(run["gpu"])
    evil = authed_nats.issue_worker(EVIL, ["CPU"])
    attacker = await authed_nats.connect(Role.WORKER, "attacker", worker=EVIL)
    violations: list[str] = []

    async def on_error(exc: Exception) -> None:
        violations.append(str(exc).lower())

    nc = await nats.connect(authed_nats.url, allow_reconnect=False, error_cb=on_error, **evil.connect_options())
    try:

        async def held() -> bool:  # the honest worker holds attempt 1
            return system.service.runs.started_by(run["run_id"]) is not None

        await eventually(held)
        refused = [
            *(f"$JS.ACK.JOBS.{durable}.1.1.{n}.1.0" for n in (1, 2)),  # the first deliveries of the queue
            f"$JS.API.CONSUMER.INFO.JOBS.{durable}",
            f"$JS.API.CONSUMER.MSG.NEXT.JOBS.{durable}",
        ]
        for subject in refused:
            await nc.publish(subject, b"-NAK")
        await nc.flush()
        queue = await attacker.jobs(run["gpu"])
        assert await queue.fetch(timeout_s=1) == []  # the core has nothing to hand out: the job is held
        with pytest.raises(BusError, match="was not handed that job"):
            await queue.settle(Settle("nak", run["run_id"], 1, refused[0], "0" * 64))
        guess = signing.attempt_key(signing.run_key(b"a guess at the core's secret", run["run_id"]), 2)
        started = Progress(stage="started", detail="evil, attempt 2")
        await attacker.publish_progress(
            RunProgress(run["run_id"], accepted.data["submission_id"], run["gpu"], started, 2, worker=EVIL), guess
        )
        await attacker.publish_result(forged(run, accepted.data["submission_id"], attempts=2), guess)
        finals = await system.finals({run["run_id"]})
    finally:
        await nc.close()
        await attacker.close()
    assert all(any(f'publish to "{s.lower()}"' in v for v in violations) for s in refused), violations
    assert finals[run["run_id"]].data["status"] == "passed"
    stored = system.store.run(run["run_id"])
    assert stored.status == "passed" and stored.score_us is not None and stored.score_us >= 50
    (ran,) = system.store.submission_detail(accepted.data["submission_id"]).runs
    assert (ran.worker, ran.attempts) == (WORKER, 1)
    (entry,) = system.store.ranking("vectoradd", run["gpu"])
    assert entry.run_id == run["run_id"] and entry.score_us == stored.score_us
    replies = b"\n".join(await all_replies(system.service.bus))
    assert b"evil" not in replies and b"0.5" not in replies


async def test_a_flood_into_events_stops_at_its_byte_limit_and_the_core_goes_on(make_authed_system, authed_nats):
    limit = 256 * 1024
    system = await make_authed_system(FakeRunner(result_for=passed_result), events_max_bytes=limit)
    accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    (run,) = accepted.data["runs"]
    await system.finals({run["run_id"]})
    flooder = authed_nats.issue_worker("flood", ["CPU"])
    nc = await nats.connect(authed_nats.url, allow_reconnect=False, **flooder.connect_options())
    try:
        js = nc.jetstream()
        sent = 0
        with pytest.raises(nats.js.errors.APIError, match="maximum bytes exceeded"):
            for sent in range(1000):  # 4 MB of junk, sixteen times the limit
                await js.publish(subjects.progress_subject("flood", f"junk{sent}"), b"x" * 4096)
        assert 0 < sent < limit // 4096
    finally:
        await nc.close()
    state = (await system.service.bus._js.stream_info(subjects.EVENTS)).state
    assert state.bytes <= limit
    stored = await system.service.bus.last_result(run["run_id"])  # the flood pushed nothing stored out
    assert stored is not None and stored.result.status is Status.PASSED
    answer = await system.ask("ada", CommandKind.LIST)  # the core still serves commands
    assert answer.tone is not Tone.ERROR


class Recording(FakeRunner):
    """A fake runner that keeps every job it was given."""

    def __init__(self) -> None:
        super().__init__(result_for=passed_result)
        self.jobs: list[EvalJob] = []

    async def run(self, job, on_progress=None):
        self.jobs.append(job)
        return await super().run(job, on_progress)


async def test_only_ranked_jobs_carry_the_secret_seed(make_authed_system):
    runner = Recording()
    system = await make_authed_system(runner)
    ids = set()
    for mode in ("test", "benchmark", "profile", "ranked"):
        accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd", mode=mode)
        ids |= {r["run_id"] for r in accepted.data["runs"]}
    await system.finals(ids)
    seed = system.store.get_leaderboard("vectoradd").secret_seed
    assert {job.mode.value: job.secret_seed for job in runner.jobs} == {
        "test": None,
        "benchmark": None,
        "profile": None,
        "ranked": seed,
    }


@pytest.mark.slow
async def test_the_secret_seed_and_result_keys_never_reach_replies_or_logs(local_runner, make_authed_system, caplog):
    """Through the real harness on CPU: a ranked run of a correct and of a wrong kernel."""
    caplog.set_level(logging.DEBUG)
    system = await make_authed_system(local_runner)
    good = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    bad = await system.submit("bob", WRONG, leaderboard="vectoradd")
    runs = {r["run_id"] for a in (good, bad) for r in a.data["runs"]}
    finals = await system.finals(runs, timeout_s=180)
    assert {f.data["status"] for f in finals.values()} == {"passed", "failed"}
    secret = result_secret(system.settings)
    hidden = [
        str(system.store.get_leaderboard("vectoradd").secret_seed),
        secret.decode(),
        *(signing.attempt_key(signing.run_key(secret, run_id), 1) for run_id in runs),
        signing.worker_key(secret, WORKER),
    ]
    stored = [system.store.submission_detail(a.data["submission_id"]) for a in (good, bad)]
    places = {
        "replies": b"\n".join(await all_replies(system.service.bus)).decode(),
        "logs": caplog.text,
        "stored results": repr(stored),
    }
    for place, text in places.items():
        for value in hidden:
            assert value not in text, f"a secret reached the {place}"
