"""The github backend through the real queue on a real nats-server, against a loopback GitHub.

The loopback server (``fakes.github``) speaks the REST API and runs the real workflow file's step, so a
passing job goes queue -> worker -> GitHubRunner -> dispatch -> ``python -m harness.host.remote`` -> artifact.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from fakes.github import FakeGitHub, load_workflow

from core.contracts.bus import Bus
from core.contracts.config import Settings
from harness.host.remote import decode_payload, payload_for
from harness.result import FailureKind, Status
from runners.base import BackendError
from runners.github_api import GitHubAPI
from runners.github_backend import ANSWER_FILE, GitHubRunner, artifact_name, github_api
from runners.remote import CallStore, MemoryCalls
from runners.worker import Worker

GPU = "H100"


@pytest.fixture
async def github() -> AsyncIterator[FakeGitHub]:
    fake = FakeGitHub()
    await fake.start()
    yield fake
    await fake.close()


def api(github: FakeGitHub, **changes: str) -> GitHubAPI:
    settings = Settings(github_token=github.token, github_repo=github.repo, github_api_url=github.base_url)
    for name, value in changes.items():
        setattr(settings, name, value)
    return github_api(settings)


def github_runner(github: FakeGitHub, calls: CallStore, **options) -> GitHubRunner:
    return GitHubRunner(GPU, calls, api(github, **options.pop("settings", {})), poll_s=0.05, **options)


def worker(bus: Bus, runner: GitHubRunner) -> Worker:
    return Worker(bus, GPU, runner, poll_s=0.2, retry_delay_s=0.1)


async def test_a_job_runs_as_a_workflow_run_and_its_answer_comes_back_as_an_artifact(
    bus, results, run_job, github, serve
) -> None:
    calls = await bus.runner_calls()
    job = run_job(GPU)
    await bus.publish_job(job)
    async with serve(worker(bus, github_runner(github, calls))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED, result.result.failure
    assert result.cost_usd is None and result.result.gpu_s > 0  # self-hosted: not billed per run
    (dispatch,) = github.dispatches
    assert dispatch["ref"] == "main" and dispatch["inputs"]["run_id"] == job.run_id
    assert dispatch["inputs"]["gpu"] == GPU
    assert decode_payload(dispatch["inputs"]["payload"]) == payload_for(job.job)
    (run,) = github.runs.values()
    assert run["display_title"] == job.run_id and run["conclusion"] == "success"
    assert (await calls.get(job.run_id))["gh_run"] == run["id"]
    storage = [headers for method, path, headers in github.requests if path.startswith("/storage/")]
    assert storage and all("Authorization" not in headers for headers in storage)


async def test_without_run_details_the_run_is_found_by_its_title(bus, results, run_job, github, serve) -> None:
    github.old_server = True
    calls = await bus.runner_calls()
    job = run_job(GPU)
    await bus.publish_job(job)
    async with serve(worker(bus, github_runner(github, calls))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED
    assert len(github.dispatches) == 1
    assert (await calls.get(job.run_id))["gh_run"] in github.runs


async def test_a_restarted_worker_follows_the_same_workflow_run(
    bus, results, run_job, github, serve, eventually
) -> None:
    github.gate.clear()  # the run is queued on GitHub; no runner has it yet
    calls = await bus.runner_calls()
    job = run_job(GPU)
    await bus.publish_job(job)

    async def recorded() -> bool:
        return bool((await calls.get(job.run_id) or {}).get("gh_run"))

    async with serve(worker(bus, github_runner(github, calls))):
        await eventually(recorded)
    async with serve(worker(bus, github_runner(github, calls))):
        github.gate.set()
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED and result.attempts == 2
    assert len(github.dispatches) == 1 and len(github.runs) == 1


@pytest.mark.slow
async def test_a_dispatch_github_never_turned_into_a_run_is_sent_again(bus, results, run_job, github, serve) -> None:
    github.old_server, github.lose_dispatches = True, 1
    await bus.publish_job(run_job(GPU))
    async with serve(worker(bus, github_runner(github, await bus.runner_calls(), find_grace_s=0.5))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.PASSED
    assert len(github.dispatches) == 2 and len(github.runs) == 1


async def test_a_run_no_runner_took_in_time_is_cancelled(bus, results, run_job, github, serve) -> None:
    github.runners_online = False
    job = run_job(GPU)
    gh_run = await api(github).dispatch({"run_id": job.run_id, "gpu": GPU, "payload": "x"})
    calls = await bus.runner_calls()  # dispatched a day ago, still queued
    await calls.put(
        job.run_id,
        {"backend": "github", "started_at": time.time() - 86_400, "gh_run": gh_run, "dispatched": time.time() - 86_400},
    )
    await bus.publish_job(job)
    async with serve(worker(bus, github_runner(github, calls))):
        (result,) = await results.wait(1)
    assert result.result.status is Status.TIMEOUT and "cancelled" in result.result.failure.message
    assert github.runs[gh_run]["conclusion"] == "cancelled"
    assert await calls.get(job.run_id) is None


async def test_a_run_that_failed_before_answering_points_at_the_workflow_run(
    bus, results, run_job, github, serve
) -> None:
    github.step_fails = True
    await bus.publish_job(run_job(GPU))
    async with serve(worker(bus, github_runner(github, await bus.runner_calls()))):
        (result,) = await results.wait(1)
    failure = result.result.failure
    assert result.result.status is Status.ERROR and failure.kind is FailureKind.HARNESS_ERROR
    assert "'failure'" in failure.message and "https://github.example/" in failure.message


async def test_a_refused_token_says_the_runner_is_not_configured_and_never_shows_the_token(
    bus, results, run_job, github, serve
) -> None:
    runner = GitHubRunner(
        GPU, await bus.runner_calls(), api(github, github_token="github_pat_wrong_secret"), poll_s=0.05
    )
    await bus.publish_job(run_job(GPU))
    async with serve(worker(bus, runner)):
        (result,) = await results.wait(1)
    message = result.result.failure.message
    assert message.startswith("The GitHub runner is not configured") and "401" in message
    assert "Bad credentials" in message and "github_pat" not in message + result.result.failure.log_tail
    assert not github.dispatches


@pytest.mark.slow
async def test_rate_limits_are_waited_out(eval_job, github) -> None:
    github.rate_limited = 2
    runner = github_runner(github, MemoryCalls())
    result = await runner.run(eval_job())
    await runner.close()
    assert result.status is Status.PASSED


async def test_a_job_too_large_for_workflow_inputs_is_refused_before_dispatch(eval_job, github) -> None:
    job = eval_job()
    job.submission_source += "\n" + "".join(f"# {i:08x} {hash(str(i))}\n" for i in range(6000))
    runner = github_runner(github, MemoryCalls())
    result = await runner.run(job)
    await runner.close()
    assert result.status is Status.ERROR and "too large to send to a GitHub runner" in result.failure.message
    assert not github.dispatches


def test_settings_without_token_or_repository_are_refused_with_what_to_set() -> None:
    with pytest.raises(BackendError, match="GITHUB_TOKEN and KERNELRANK_GITHUB_REPO"):
        github_api(Settings())
    assert "secret" not in repr(github_api(Settings(github_token="secret", github_repo="a/b")))


def test_the_shipped_workflow_is_the_one_the_backend_expects() -> None:
    workflow = load_workflow()
    inputs = workflow["on"]["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"run_id", "gpu", "payload"} and all(spec["required"] for spec in inputs.values())
    assert workflow["run-name"] == "${{ inputs.run_id }}"
    job = workflow["jobs"]["evaluate"]
    assert job["runs-on"] == ["self-hosted", "${{ inputs.gpu }}"]
    (evaluate,) = [step for step in job["steps"] if "run" in step]
    assert "-m harness.host.remote --payload-env KERNELRANK_PAYLOAD --output " + ANSWER_FILE in evaluate["run"]
    assert "inputs." not in evaluate["run"]  # the payload reaches the step only through its environment
    assert evaluate["env"]["KERNELRANK_PAYLOAD"] == "${{ inputs.payload }}"
    (upload,) = [step for step in job["steps"] if str(step.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload["with"]["name"] == artifact_name("${{ inputs.run_id }}") and upload["if"] == "always()"
    assert workflow["permissions"] == {"contents": "read"}
