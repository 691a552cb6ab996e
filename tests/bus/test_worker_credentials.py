"""One credential per worker, on a real nats-server that asks for credentials (as ``kernelrank up`` runs it).

Worker ``w-cpu`` (authed_nats's own) pulls a job; worker ``w-b`` plays the attacker holding a stolen credential of
its own. The server must refuse it the other worker's inbox, reports, results and pools, and drop it once revoked.
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
from worker_testkit import WORKER, running

from core.contracts import issued_workers, subjects
from core.contracts.bus import Bus, BusUnavailable, Role
from core.contracts.config import ConfigError
from core.contracts.credentials import BusCredentials
from core.contracts.messages import PoolStatus
from core.service.report_check import IssuedPools, Registry
from runners.fake import FakeRunner
from runners.worker import Worker

GPU = "CPU"
THIEF = "w-b"


@pytest.fixture
async def core(authed_nats) -> AsyncIterator[Bus]:
    bus = await authed_nats.connect(Role.CORE)
    await bus.ensure_streams([GPU, "H100"], ack_wait_s=2, max_deliver=3)
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
            (delivery,) = await queue.fetch(1, timeout_s=5)  # delivered to the victim's own inbox
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
        f"$JS.API.CONSUMER.MSG.NEXT.JOBS.{subjects.runner_durable(GPU)}",
        f"$JS.API.CONSUMER.INFO.JOBS.{subjects.runner_durable(GPU)}",
        f"$JS.ACK.JOBS.{subjects.runner_durable(GPU)}.1.1.1.1.0",
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


@pytest.mark.slow
async def test_a_worker_that_cannot_report_its_start_under_its_name_gives_the_job_back_unrun(
    authed_nats, core: Bus, make_job
) -> None:
    """Its start pairs the run with it: a job whose start the server refuses (a name that is not its user's) is
    never run, so no result can follow that the core would have to drop."""
    runner = FakeRunner()
    bus = await authed_nats.connect(Role.WORKER)
    assert await core.publish_job(make_job())
    try:
        async with running(Worker(bus, GPU, runner, name="impostor", retry_delay_s=0.1, poll_s=0.2)):
            for _ in range(200):
                if (await core._js.consumer_info(subjects.JOBS, subjects.runner_durable(GPU))).num_redelivered:
                    break
                await asyncio.sleep(0.05)
        info = await core._js.consumer_info(subjects.JOBS, subjects.runner_durable(GPU))
        assert info.num_redelivered >= 1 and runner.runs == 0
    finally:
        await bus.close()
