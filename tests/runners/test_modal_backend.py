"""The modal backend driven through the real queue on a real nats-server, against a stand-in for Modal.

The stand-in (``fakes.modal``) raises Modal's own exception classes and runs the app's real function body,
so a passing job goes queue -> worker -> ModalRunner -> Function.from_name -> spawn -> the harness on CPU.
Missing credentials use the real ``modal`` client, which refuses before it touches the network.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import modal.exception
import nats
import pytest
from fakes.modal import FakeModal, Flaky

import harness.host.remote
from core.contracts import subjects
from core.contracts.bus import Bus
from core.contracts.messages import PoolStatus, decode
from harness.host.remote import payload_for
from harness.result import FailureKind, Status
from runners import modal_app
from runners.modal_backend import ModalRunner, function_name
from runners.remote import CallStore, job_time_limit_s
from runners.worker import Worker

GPU = "H100"
PRICE = 0.001097


@pytest.fixture
def fake(cache_env) -> Iterator[FakeModal]:
    """Modal with the app ``kernelrank`` deployed: every pool's function runs the app's real body."""
    fake = FakeModal({"kernelrank": {function_name(pool): modal_app.run_job for pool in (GPU, "CPU")}})
    yield fake
    fake.close()


def modal_runner(fake: FakeModal | None, calls: CallStore, gpu: str = GPU, **options) -> ModalRunner:
    return ModalRunner(gpu, calls, modal_api=fake, price_per_s=PRICE, poll_s=0.1, **options)


def worker(bus: Bus, runner: ModalRunner, **options) -> Worker:
    return Worker(bus, runner.gpu, runner, poll_s=0.2, retry_delay_s=0.1, **options)


@pytest.mark.slow
async def test_a_job_runs_in_its_pools_function_and_comes_back_with_the_gpu_and_its_cost(
    bus, results, run_job, fake, serve, monkeypatch
) -> None:
    monkeypatch.setattr(harness.host.remote, "gpu_name", lambda: "NVIDIA H100 80GB HBM3")
    calls = await bus.runner_calls()
    job = run_job(GPU, device="auto")  # the harness picks the CPU here, the GPU on Modal
    await bus.publish_job(job)
    async with serve(worker(bus, modal_runner(fake, calls))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED and result.attempts == 1
    assert result.result.system.gpu_name == "NVIDIA H100 80GB HBM3"
    ((app, name, options, payload),) = fake.spawned
    assert (app, name, options) == ("kernelrank", "run_H100", {})
    assert payload == payload_for(job.job)
    assert result.result.gpu_s > 0
    assert result.cost_usd == pytest.approx(result.result.gpu_s * PRICE, rel=1e-3)
    record = await calls.get(job.run_id)  # kept: a redelivery re-reads the stored output, never reruns
    assert record["backend"] == "modal" and record["call_id"] in fake.calls


@pytest.mark.parametrize(
    "raised",
    [
        modal.exception.ExecutionError("Could not deserialize remote exception"),
        modal.exception.RemoteError("container crashed"),
        ZeroDivisionError("remote"),
    ],
)
async def test_an_exception_from_the_remote_side_is_an_error_blamed_on_kernelrank(
    bus, results, run_job, fake, serve, raised
) -> None:
    fake.outcomes = [raised]
    calls = await bus.runner_calls()
    job = run_job(GPU)
    await bus.publish_job(job)
    async with serve(worker(bus, modal_runner(fake, calls))):
        (result,) = await results.wait(1)
    failure = result.result.failure
    assert result.result.status is Status.ERROR and failure.kind is FailureKind.HARNESS_ERROR
    assert "not to blame" in failure.message and type(raised).__name__ in failure.log_tail
    assert await calls.get(job.run_id) is None


@pytest.mark.slow
async def test_a_lost_container_goes_back_through_the_queue_and_runs_again(bus, results, run_job, fake, serve) -> None:
    fake.outcomes = [modal.exception.InternalFailure("Worker was preempted"), "ok"]
    await bus.publish_job(run_job(GPU))
    async with serve(worker(bus, modal_runner(fake, await bus.runner_calls()))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED
    assert result.attempts == 2 and len(fake.spawned) == 2


async def test_modal_stopping_the_function_at_its_time_limit_is_a_timeout(bus, results, run_job, fake, serve) -> None:
    fake.outcomes = [modal.exception.FunctionTimeoutError("Function timed out after 1200 s")]
    await bus.publish_job(run_job(GPU))
    async with serve(worker(bus, modal_runner(fake, await bus.runner_calls()))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.TIMEOUT and result.result.failure.kind is FailureKind.TIMEOUT


async def test_a_call_past_its_deadline_is_cancelled_and_its_container_killed(
    bus, results, run_job, fake, serve
) -> None:
    fake.outcomes = ["hang"]
    job = run_job(GPU)
    stuck = await fake.Function.from_name("kernelrank", "run_H100").spawn.aio(payload_for(job.job))
    calls = await bus.runner_calls()  # a call that has waited for a GPU far longer than allowed
    await calls.put(job.run_id, {"backend": "modal", "call_id": stuck.object_id, "started_at": time.time() - 86_400})
    await bus.publish_job(job)
    async with serve(worker(bus, modal_runner(fake, calls))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.TIMEOUT and "cancelled" in result.result.failure.message
    assert stuck.cancelled and stuck.terminated
    assert len(fake.spawned) == 1 and await calls.get(job.run_id) is None


async def test_missing_credentials_say_the_runner_is_not_configured(
    bus, results, run_job, serve, tmp_path, monkeypatch
) -> None:
    for name in ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"):
        monkeypatch.setenv(name, "")  # the real client, with no token at all
    monkeypatch.setenv("MODAL_SERVER_URL", "http://127.0.0.1:9")
    job = run_job(GPU)
    await bus.publish_job(job)
    async with serve(worker(bus, modal_runner(None, await bus.runner_calls()))):
        (result,) = await results.wait(1)
    failure = result.result.failure
    assert result.result.status is Status.ERROR and result.attempts == 1
    assert failure.message.startswith("The Modal runner is not configured: Modal refused this worker's credentials")
    assert "MODAL_TOKEN_ID" in failure.message


async def test_an_app_that_was_never_deployed_says_how_to_deploy_it(bus, results, run_job, serve, cache_env) -> None:
    empty = FakeModal({"someone-else": {}})
    try:
        await bus.publish_job(run_job(GPU))
        async with serve(worker(bus, modal_runner(empty, await bus.runner_calls()))):
            (result,) = await results.wait(1)
    finally:
        empty.close()
    message = result.result.failure.message
    assert "has no function run_H100" in message and "kernelrank modal deploy" in message


async def test_a_restarted_worker_reattaches_to_the_running_call_instead_of_paying_twice(
    bus, results, run_job, fake, serve, eventually
) -> None:
    fake.gate.clear()  # the call starts, then waits inside its container
    calls = await bus.runner_calls()
    job = run_job(GPU)
    await bus.publish_job(job)
    async with serve(worker(bus, modal_runner(fake, calls))):
        await eventually(lambda: _has_record(calls, job.run_id))
    assert len(fake.spawned) == 1 and not results.items  # the first worker is gone, its job given back
    async with serve(worker(bus, modal_runner(fake, calls))):
        await eventually(lambda: _polled(fake))
        fake.gate.set()
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED and result.attempts == 2
    assert len(fake.spawned) == 1


@pytest.mark.parametrize("gone", [modal.exception.OutputExpiredError(), None])
async def test_a_call_that_is_gone_on_reattach_is_started_again(bus, results, run_job, fake, serve, gone) -> None:
    job = run_job(GPU)
    old_call = "fc-unknown-to-modal"
    if gone is not None:  # a call Modal knows, whose output has expired
        fake.outcomes = [gone]
        old_call = (await fake.Function.from_name("kernelrank", "run_H100").spawn.aio(payload_for(job.job))).object_id
    calls = await bus.runner_calls()
    await calls.put(job.run_id, {"backend": "modal", "call_id": old_call, "started_at": time.time()})
    await bus.publish_job(job)
    async with serve(worker(bus, modal_runner(fake, calls))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED and result.attempts == 1
    assert (await calls.get(job.run_id))["call_id"] not in (old_call, None)


@pytest.mark.slow
async def test_a_network_blip_while_waiting_keeps_the_same_call(bus, results, run_job, fake, serve) -> None:
    fake.outcomes = [Flaky(modal.exception.ConnectionError("Could not connect to the Modal server"))]
    await bus.publish_job(run_job(GPU))
    async with serve(worker(bus, modal_runner(fake, await bus.runner_calls()))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED and len(fake.spawned) == 1


async def test_a_run_placed_on_another_gpu_type_does_not_count(bus, results, run_job, fake, serve, monkeypatch) -> None:
    monkeypatch.setattr(harness.host.remote, "gpu_name", lambda: "NVIDIA H200")
    await bus.publish_job(run_job(GPU))
    async with serve(worker(bus, modal_runner(fake, await bus.runner_calls()))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.ERROR
    assert "placed on an NVIDIA H200 instead of an H100" in result.result.failure.message


async def test_a_job_that_needs_longer_than_the_deployed_limit_gets_a_longer_variant(eval_job, fake) -> None:
    from runners.remote import MemoryCalls

    job = eval_job()
    runner = modal_runner(fake, MemoryCalls(), deployed_timeout_s=60)
    assert (await runner.run(job)).status is Status.PASSED
    ((_, _, options, _),) = fake.spawned
    assert options == {"timeout": job_time_limit_s(job)} and options["timeout"] > 60


async def test_modal_backlog_is_reported_in_the_pool_status(bus, nats_url, fake, serve, eventually) -> None:
    fake.backlog = 7
    nc = await nats.connect(nats_url)
    statuses: list[PoolStatus] = []

    async def on_status(msg) -> None:
        statuses.append(decode(PoolStatus, msg.data))

    async def reported() -> bool:
        return bool(statuses)

    async def signed_off() -> bool:
        return bool(statuses) and statuses[-1].capacity == 0

    await nc.subscribe(subjects.pool_status_subject("w-modal", GPU), cb=on_status)
    try:
        async with serve(
            Worker(
                bus,
                GPU,
                modal_runner(fake, await bus.runner_calls()),
                concurrency=4,
                poll_s=0.2,
                status_s=0.1,
                name="w-modal",
            )
        ):
            await eventually(reported)
        await eventually(signed_off)  # the last word of a stopping worker: no capacity left
    finally:
        await nc.close()
    first = statuses[0]
    assert (first.gpu, first.worker, first.backend, first.capacity, first.backlog) == (GPU, "w-modal", "modal", 4, 7)
    assert first.running == 0 and first.at > 0
    assert (statuses[-1].capacity, statuses[-1].running) == (0, 0)


async def _has_record(calls: CallStore, run_id: str) -> bool:
    return await calls.get(run_id) is not None


async def _polled(fake: FakeModal) -> bool:
    return fake.polls > 0
