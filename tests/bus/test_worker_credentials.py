"""One credential per worker, on a real nats-server that asks for credentials (as ``kernelrank up`` runs it).

Worker ``w-cpu`` (authed_nats's own) pulls a job; worker ``w-b`` plays the attacker holding a stolen credential of
its own. The server must refuse it the other worker's inbox, reports, results and pools, and drop it once revoked;
the server and the core (its part that hands out jobs) must refuse it another worker's delivery of a job of its
own pool, whatever attempt it claims, while a job whose holder died still goes to the next worker.
Each refusal test also does one thing the credential may do, so a probe that reports everything cannot pass.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client
from worker_testkit import WORKER, hand_out_jobs, running

from core.contracts import issued_workers, signing, subjects
from core.contracts.bus import Bus, BusError, BusUnavailable, Role, Settle
from core.contracts.config import ConfigError
from core.contracts.credentials import BusCredentials
from core.contracts.messages import PoolStatus, RunProgress, RunResult
from core.service.runs import RunBook
from core.service.worker_reports import IssuedPools, Registry, ReportCheck
from harness.result import EvalResult, Mode, Progress, Status
from runners.fake import FakeRunner
from runners.worker import Worker

GPU = "CPU"
THIEF = "w-b"


@pytest.fixture
def book() -> RunBook:
    """The run book of the core's part that hands out jobs: who holds which attempt."""
    return RunBook()


@pytest.fixture
async def core(authed_nats, book: RunBook) -> AsyncIterator[Bus]:
    bus = await authed_nats.connect(Role.CORE)
    await bus.ensure_streams([GPU, "H100"], ack_wait_s=2, max_deliver=3)
    await hand_out_jobs(bus, [GPU, "H100"], authed_nats.core_secret, book)
    yield bus
    await bus.close()


class Probe:
    """A raw connection with one worker's credential, keeping the permission violations the server reports."""

    def __init__(self) -> None:
        self.nc = Client()
        self.violations: list[str] = []

    def reported(self, action: str, subject: str) -> bool:
        wanted = f'violation for {action} to "{subject}"'.lower()
        return any(wanted in v.lower() for v in self.violations)

    async def all_reported(self, expected: list[tuple[str, str]], timeout_s: float = 5.0) -> list[tuple[str, str]]:
        """The expected violations still missing after ``timeout_s``."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while (missing := [e for e in expected if not self.reported(*e)]) and (
            asyncio.get_running_loop().time() < deadline
        ):
            await asyncio.sleep(0.05)
        return missing


@contextlib.asynccontextmanager
async def probe(url: str, credentials: BusCredentials) -> AsyncIterator[Probe]:
    p = Probe()

    async def on_error(exc: Exception) -> None:
        p.violations.append(str(exc))

    await p.nc.connect(url, error_cb=on_error, allow_reconnect=False, **credentials.connect_options())
    try:
        yield p
    finally:
        await p.nc.close()


async def test_a_stolen_credential_cannot_listen_on_another_workers_inbox_nor_read_the_job_it_pulled(
    authed_nats, core: Bus, make_job
) -> None:
    thief = authed_nats.issue_worker(THIEF, [GPU])
    victim = await authed_nats.connect(Role.WORKER)
    async with probe(authed_nats.url, thief) as p:
        try:
            spies = [await p.nc.subscribe(s) for s in (f"{subjects.worker_inbox(WORKER)}.>", "_INBOX.worker.>")]
            own = await p.nc.subscribe(f"{subjects.worker_inbox(THIEF)}.>")  # allowed: must not be reported
            await p.nc.flush()
            job = make_job()
            assert await core.publish_job(job)
            queue = await victim.jobs(GPU)
            (delivery,) = await queue.fetch(timeout_s=5)  # delivered to the victim's own inbox
            assert delivery.message.run_id == job.run_id
            assert await p.all_reported([("subscription", s.subject) for s in spies]) == []
            assert not p.reported("subscription", own.subject)
            for spy in spies:
                with pytest.raises(nats.errors.TimeoutError):
                    await spy.next_msg(timeout=0.3)
            await delivery.ack()
            await queue.close()
        finally:
            await victim.close()


async def test_a_stolen_credential_pulls_only_its_own_pools_and_reports_and_keeps_calls_only_under_its_own_name(
    authed_nats, core: Bus
) -> None:
    thief = authed_nats.issue_worker(THIEF, ["H100"])
    refused = [
        *(
            f"{op}.{subjects.runner_durable(pool)}{rest}"  # the job queues are the core's, even its own pool's
            for pool in (GPU, "H100")
            for op, rest in (
                ("$JS.API.CONSUMER.MSG.NEXT.JOBS", ""),
                ("$JS.API.CONSUMER.INFO.JOBS", ""),
                ("$JS.ACK.JOBS", ".1.1.1.1.0"),
            )
        ),
        subjects.work_subject(WORKER, GPU),  # asking the core for jobs as another worker
        subjects.work_subject(THIEF, GPU),  # or for a pool it was not issued
        f"$JS.API.DIRECT.GET.EVENTS.{subjects.result_subject(THIEF, 'r1')}",
        subjects.result_subject(WORKER, "r1"),
        subjects.progress_subject(WORKER, "r1"),
        f"$JS.API.DIRECT.GET.EVENTS.{subjects.result_subject(WORKER, 'r1')}",
        f"$JS.API.DIRECT.GET.EVENTS.{subjects.any_result_subject('r1')}",
        subjects.pool_status_subject(WORKER, GPU),  # another worker's name
        subjects.pool_status_subject(THIEF, "B200"),  # a pool it was not issued for
        subjects.pool_status_subject(THIEF, GPU),
        f"$KV.runner_calls.{WORKER}.r1",  # another worker's remote calls
        f"$JS.API.DIRECT.GET.KV_runner_calls.$KV.runner_calls.{WORKER}.r1",
        "$JS.API.DIRECT.GET.KV_runner_calls",
        "$JS.API.STREAM.MSG.GET.KV_runner_calls",
    ]
    allowed = [
        subjects.work_subject(THIEF, "H100"),
        subjects.result_subject(THIEF, "r1"),
        subjects.pool_status_subject(THIEF, "H100"),
        f"$KV.runner_calls.{THIEF}.r1",
    ]
    async with probe(authed_nats.url, thief) as p:
        for subject in refused + allowed:
            await p.nc.publish(subject, b"{}")
        await p.nc.flush()
        assert await p.all_reported([("publish", s) for s in refused]) == []
        assert not any(p.reported("publish", s) for s in allowed)


async def test_the_core_ignores_pool_status_that_its_subject_or_the_registry_does_not_back(
    nats_url: str, tmp_path: Path
) -> None:
    """On an open bus nothing stops the publish: the core drops a status whose body disagrees with its subject,
    and one for a pool the registry does not give its worker."""
    recorded: list[PoolStatus] = []

    async def record(status: PoolStatus) -> None:
        recorded.append(status)

    secrets = tmp_path / "secrets"
    issued_workers.issue(secrets, THIEF, [GPU], b"secret")
    pools = IssuedPools(Registry(secrets), record, enforce=True)
    core = await Bus.connect(nats_url, "core")
    raw = await nats.connect(nats_url)
    try:
        await core.watch_pool_status(pools.record)
        fake = PoolStatus(gpu="B200", worker=THIEF, backend="local", running=0, capacity=20)
        await raw.publish(subjects.pool_status_subject(THIEF, GPU), _encode(fake))  # body says B200
        await core.publish_pool_status(fake)  # its own subject, but not issued for B200
        real = PoolStatus(gpu=GPU, worker=THIEF, backend="local", running=0, capacity=1)
        await core.publish_pool_status(real)
        for _ in range(100):
            if recorded:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        assert recorded == [real]
    finally:
        await raw.close()
        await core.close()


def _encode(status: PoolStatus) -> bytes:
    from core.contracts.messages import encode

    return encode(status)


async def test_a_revoked_worker_is_disconnected_and_refused_while_the_others_go_on(authed_nats, core: Bus) -> None:
    thief_credentials = authed_nats.issue_worker(THIEF, [GPU])
    thief = await authed_nats.connect(Role.WORKER, worker=THIEF)
    victim = await authed_nats.connect(Role.WORKER)
    try:
        assert thief._nc.is_connected
        authed_nats.revoke_worker(THIEF)
        for _ in range(100):
            if not thief._nc.is_connected:
                break
            await asyncio.sleep(0.05)
        assert not thief._nc.is_connected
        with pytest.raises(BusUnavailable, match="refused the worker role's credentials"):
            await Bus.connect(authed_nats.url, "again", thief_credentials)
        assert not issued_workers.credential_file(authed_nats.secrets, THIEF).exists()
        with pytest.raises(ConfigError, match="was revoked"):  # the name is never issued again
            authed_nats.issue_worker(THIEF, [GPU])
        await victim.jobs(GPU)  # the other worker still works
        assert victim._nc.is_connected
    finally:
        await thief.close()
        await victim.close()


async def test_a_worker_cannot_get_jobs_under_another_name(authed_nats, core: Bus, make_job) -> None:
    """The core hands jobs out on subjects that carry the asking worker's name, which only that worker's user may
    publish on: a worker that names itself otherwise is never handed a job, so none of its reports can follow."""
    runner = FakeRunner()
    bus = await authed_nats.connect(Role.WORKER)
    job = make_job()
    assert await core.publish_job(job)
    try:
        async with running(Worker(bus, GPU, runner, name="impostor", retry_delay_s=0.1, poll_s=0.2)):
            await asyncio.sleep(1.0)  # long enough for several requests, each refused by the server
        queue = await bus.jobs(GPU)  # under its own name it gets the job, delivered for the first time
        (delivery,) = await queue.fetch(timeout_s=5)
        assert (delivery.message.run_id, delivery.deliveries, runner.runs) == (job.run_id, 1, 0)
        await delivery.ack()
    finally:
        await bus.close()


# ----- a job belongs to the worker that holds its attempt (issue 25, point 5) ---------------------------------


def passing(job, worker: str, attempt: int) -> RunResult:
    result = EvalResult(status=Status.PASSED, mode=Mode.RANKED, problem="identity", score_us=1.0)
    return RunResult(job.run_id, job.submission_id, job.gpu, result, worker=worker, attempts=attempt)


async def test_a_second_worker_of_the_pool_cannot_settle_read_or_claim_the_job_another_is_running(
    authed_nats, core: Bus, book: RunBook, make_job
) -> None:
    """The red team's attack: a second credential of the same pool NAKs the delivery an honest worker is running
    (here even knowing its exact ack subject), reads the pool consumer's state, and claims the job through the
    core. The server refuses the first two, the core the third; the honest worker's result is the one that counts."""
    thief_credentials = authed_nats.issue_worker(THIEF, [GPU])
    honest, thief = await authed_nats.connect(Role.WORKER), await authed_nats.connect(Role.WORKER, worker=THIEF)
    checks = ReportCheck(authed_nats.core_secret, book, core, worker_keys=True)
    job = make_job(mode=Mode.RANKED)
    assert await core.publish_job(job)
    try:
        (delivery,) = await (await honest.jobs(GPU)).fetch(timeout_s=5)
        assert delivery.deliveries == 1 and delivery.message.result_key
        durable = subjects.runner_durable(GPU)
        consumer_info, pull = f"$JS.API.CONSUMER.INFO.JOBS.{durable}", f"$JS.API.CONSUMER.MSG.NEXT.JOBS.{durable}"
        async with probe(authed_nats.url, thief_credentials) as p:
            await p.nc.publish(delivery._ack, b"-NAK")  # the honest worker's own delivery
            await p.nc.publish(delivery._ack, b"+ACK")
            await p.nc.publish(consumer_info, b"")
            await p.nc.publish(pull, b'{"batch": 1}')
            await p.nc.flush()
            refused = [("publish", delivery._ack), ("publish", consumer_info), ("publish", pull)]
            assert await p.all_reported(refused) == []
        thief_queue = await thief.jobs(GPU)
        assert await thief_queue.fetch(timeout_s=1) == []  # the job is held: nothing to hand out
        for grant in ("0" * 64, delivery._grant):  # made up, or the honest worker's own: it names that worker
            with pytest.raises(BusError, match="was not handed that job"):
                await thief_queue.settle(Settle("nak", job.run_id, 1, delivery._ack, grant))
        # what the attack did next: a start and a passing result for the attempt it hoped to get
        key = signing.attempt_key(signing.run_key(b"a guess at the core's secret", job.run_id), 2)
        await thief.publish_progress(RunProgress(job.run_id, 1, GPU, Progress(stage="started"), 2, worker=THIEF), key)
        await thief.publish_result(passing(job, THIEF, 2), key)
        assert not await checks.result_counts(await core.last_result(job.run_id))
        info = await core._js.consumer_info(subjects.JOBS, durable)
        assert (info.num_redelivered, info.num_ack_pending) == (0, 1)  # still the honest worker's first delivery

        await delivery.in_progress()
        mine = delivery.message.result_key
        await honest.publish_progress(
            RunProgress(job.run_id, 1, GPU, Progress(stage="started"), 1, worker=WORKER), mine
        )
        await honest.publish_result(passing(job, WORKER, 1), mine)
        await delivery.ack()
        stored = await core.last_result(job.run_id)
        assert stored is not None and stored.worker == WORKER and await checks.result_counts(stored)
        assert (await core._js.consumer_info(subjects.JOBS, durable)).num_ack_pending == 0
    finally:
        await honest.close()
        await thief.close()


async def test_a_worker_that_held_an_earlier_attempt_cannot_claim_a_later_one(
    authed_nats, core: Bus, book: RunBook, make_job
) -> None:
    """The attempt is JetStream's count read by the core, and each attempt has its own key: the worker that gave
    attempt 1 back holds attempt 1's key and grant, which settle and sign nothing of attempt 2."""
    authed_nats.issue_worker(THIEF, [GPU])
    honest, thief = await authed_nats.connect(Role.WORKER), await authed_nats.connect(Role.WORKER, worker=THIEF)
    checks = ReportCheck(authed_nats.core_secret, book, core, worker_keys=True)
    job = make_job(mode=Mode.RANKED)
    assert await core.publish_job(job)
    try:
        (first,) = await (await thief.jobs(GPU)).fetch(timeout_s=5)
        await first.nak()  # its own delivery: allowed
        (second,) = await (await honest.jobs(GPU)).fetch(timeout_s=5)
        assert (first.deliveries, second.deliveries) == (1, 2)
        assert first.message.result_key != second.message.result_key
        with pytest.raises(BusError, match="handed to another worker since"):
            await first.nak()
        old_key = first.message.result_key
        for attempt in (1, 2):  # its own, overtaken attempt; and the one it never held
            await thief.publish_result(passing(job, THIEF, attempt), old_key)
            assert not await checks.result_counts(await core.last_result(job.run_id))
        await honest.publish_result(passing(job, WORKER, 2), second.message.result_key)
        assert await checks.result_counts(await core.last_result(job.run_id))
        await second.ack()
    finally:
        await honest.close()
        await thief.close()


async def test_a_worker_that_dies_holding_a_job_leaves_it_to_another_and_its_grant_to_no_one(
    authed_nats, core: Bus, book: RunBook, make_job, eventually
) -> None:
    """At least once still holds: a holder that stops heartbeating loses the job after ack_wait, the next worker
    that asks gets it as attempt 2, and the dead one's late word changes nothing."""
    authed_nats.issue_worker(THIEF, [GPU])
    dying, other = await authed_nats.connect(Role.WORKER), await authed_nats.connect(Role.WORKER, worker=THIEF)
    checks = ReportCheck(authed_nats.core_secret, book, core, worker_keys=True)
    job = make_job()
    assert await core.publish_job(job)
    try:
        (held,) = await (await dying.jobs(GPU)).fetch(timeout_s=5)
        queue = await other.jobs(GPU)
        taken: list = []

        async def handed_on() -> bool:
            taken.extend(await queue.fetch(timeout_s=1))
            return bool(taken)

        await eventually(handed_on)  # after ack_wait (2 s) without a heartbeat
        (again,) = taken
        assert (again.message.run_id, again.deliveries) == (job.run_id, 2)
        with pytest.raises(BusError, match="handed to another worker since"):
            await held.ack()  # the dead worker's late word
        await other.publish_result(passing(job, THIEF, 2), again.message.result_key)
        assert await checks.result_counts(await core.last_result(job.run_id))
        await again.ack()
        assert (await core._js.consumer_info(subjects.JOBS, subjects.runner_durable(GPU))).num_ack_pending == 0
    finally:
        await dying.close()
        await other.close()
