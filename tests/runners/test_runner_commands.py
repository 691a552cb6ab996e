"""The commands an admin runs: ``kernelrank modal deploy|check`` and ``kernelrank worker --backend ...``."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.github import FakeGitHub
from fakes.modal import FakeModal

import harness.host.remote
from core.contracts.config import Settings, load_settings
from core.launch.main import main as kernelrank
from runners import modal_app, modal_cli
from runners.modal_backend import function_name
from runners.worker import run_worker

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake(cache_env, monkeypatch) -> Iterator[FakeModal]:
    # a Modal container imports the app as it starts, so its clock (what a run is billed from) starts then too;
    # here the module was imported with the test session
    monkeypatch.setattr(modal_app, "STARTED", time.monotonic())
    fake = FakeModal({"kernelrank": {function_name(pool): modal_app.run_job for pool in ("H100", "T4")}})
    yield fake
    fake.close()


@pytest.mark.slow
def test_check_runs_the_identity_problem_on_each_gpu_type_and_prints_what_ran_where(fake, capsys) -> None:
    settings = Settings(modal_gpus=["H100", "T4"])
    assert modal_cli.main(["check"], settings, modal_api=fake) == 0
    out = capsys.readouterr().out
    assert {name for _, name, _, _ in fake.spawned} == {"run_H100", "run_T4"}
    assert all(payload["job"]["problem"]["name"] == "identity" for *_, payload in fake.spawned)
    for gpu in ("H100", "T4"):
        (line,) = [line for line in out.splitlines() if f" {gpu} " in line]
        assert "passed" in line and re.search(r"\$\d+\.\d{4}", line) and "✗" not in line


@pytest.mark.slow
def test_check_fails_a_gpu_whose_container_could_not_use_it(fake, capsys, monkeypatch) -> None:
    monkeypatch.setattr(harness.host.remote, "gpu_name", lambda: "NVIDIA H100 80GB HBM3")  # seen, but the run used CPU
    assert modal_cli.main(["check", "--gpu", "H100"], Settings(), modal_api=fake) == 1
    out = capsys.readouterr().out
    assert "NVIDIA H100" in out and "H100 (python): the container has a GPU, but the evaluation could not use it" in out


def test_check_against_an_app_that_is_not_deployed_says_so(capsys, cache_env) -> None:
    empty = FakeModal()
    try:
        assert modal_cli.main(["check", "--gpu", "L4"], Settings(), modal_api=empty) == 1
    finally:
        empty.close()
    assert (
        "L4 (python): The Modal runner is not configured: the app 'kernelrank' has no function run_L4"
        in capsys.readouterr().out
    )


def test_deploy_without_a_modal_token_fails_with_what_to_do(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MODAL_", "KERNELRANK_"))}
    env.update(
        MODAL_CONFIG_PATH=str(tmp_path / "modal.toml"),
        MODAL_SERVER_URL="http://127.0.0.1:9",
        KERNELRANK_MODAL_APP="team-runners",
        PYTHONPATH=str(REPO),
    )
    done = subprocess.run(
        [sys.executable, "-m", "core.launch.main", "modal", "deploy"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 1
    assert "Deploying Modal app 'team-runners'" in done.stdout
    assert "Token missing" in done.stdout + done.stderr and "modal token new" in done.stderr


def test_a_github_worker_without_its_settings_stops_with_what_to_set(nats_url, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_TOKEN", "KERNELRANK_GITHUB_REPO"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KERNELRANK_NATS_URL", nats_url)
    assert kernelrank(["worker", "--gpu", "H100", "--backend", "github"]) == 2  # a setting to fix, as at load
    assert "the github backend needs GITHUB_TOKEN and KERNELRANK_GITHUB_REPO" in capsys.readouterr().err


def test_runner_settings_come_from_the_environment_and_toml(tmp_path: Path) -> None:
    toml = tmp_path / "kernelrank.toml"
    toml.write_text("[gpu_prices]\nH100 = 0.002\n\n[pool_concurrency]\nH100 = 8\n")
    settings = load_settings(
        {"KERNELRANK_POOL_CONCURRENCY": "T4=2, L4=3", "GITHUB_TOKEN": "github_pat_x"}, config_file=toml, dotenv=None
    )
    assert settings.pool_concurrency == {"T4": 2, "L4": 3}  # the environment wins over the file
    assert settings.gpu_prices["H100"] == 0.002 and settings.gpu_prices["T4"] == 0.000164  # others keep Modal's
    assert (settings.concurrency_for("L4"), settings.concurrency_for("B200")) == (3, 1)
    assert "github_pat_x" not in repr(settings)


class RecordingVolume:
    """Stands in for the cache Volume inside a container: commits are counted, files land in a folder."""

    def __init__(self) -> None:
        self.commits = 0

    def commit(self) -> None:
        self.commits += 1


def test_warm_runs_each_problems_reference_through_the_cache_writer_on_the_gpu_asked_for(
    tmp_path: Path, monkeypatch, capsys, cache_env
) -> None:
    problems = tmp_path / "problems"
    shutil.copytree(REPO / "tests" / "fixtures" / "harness" / "vectoradd", problems / "vectoradd")
    volume = RecordingVolume()
    monkeypatch.setattr(modal_app, "cache", volume)
    monkeypatch.setattr(modal_app, "CACHE_PATH", str(tmp_path / "cache"))
    fake = FakeModal({"kernelrank": {"warm_cache": modal_app.warm_cache}})
    try:
        modal_cli.main(["warm", "--gpu", "H100", "--gpu", "X9"], Settings(problems_dir=problems), modal_api=fake)
    finally:
        fake.close()
    out = capsys.readouterr().out
    ((_, name, options, payload),) = fake.spawned
    assert (name, options) == ("warm_cache", {"gpu": "H100!"})
    assert payload["job"]["problem"]["name"] == "vectoradd" and "ref_kernel" in payload["job"]["submission_source"]
    assert volume.commits == 1
    assert os.environ["TRITON_CACHE_DIR"].startswith(str(tmp_path / "cache" / "no-gpu-torch-"))
    assert "X9 (-): the app has no X9 GPU type" in out


def test_the_core_never_loads_modal_and_workers_never_load_the_app_module() -> None:
    code = (
        "import sys, core.launch.main, core.service.loop, runners.worker, runners.backends, runners.modal_backend, "
        "runners.github_backend; print(sorted(m for m in ('modal', 'runners.modal_app') if m in sys.modules))"
    )
    core_only = subprocess.run(
        [sys.executable, "-c", "import sys, core.launch.main, core.service.loop; print('modal' in sys.modules)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    workers = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert core_only.stdout.strip() == "False"
    assert workers.stdout.strip() == "[]"  # the client loads when a modal worker starts; the app, never


async def _serve_pool(nats_url: str, gpu: str, backend: str, settings: Settings, results, n: int = 1) -> list:
    """``kernelrank worker --gpu G --backend B`` in this loop until ``n`` results arrived."""
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(nats_url, gpu, backend, settings, stop=stop))
    try:
        return await results.wait(n)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def test_a_modal_worker_built_from_the_settings_reaches_the_real_modal_client(
    bus, results, run_job, nats_url, monkeypatch
) -> None:
    for name in ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("MODAL_SERVER_URL", "http://127.0.0.1:9")
    await bus.publish_job(run_job("H100"))
    (result,) = await _serve_pool(nats_url, "H100", "modal", Settings(modal_app="team-runners"), results)
    assert "The Modal runner is not configured" in result.result.failure.message


@pytest.mark.slow
async def test_a_github_worker_built_from_the_settings_runs_jobs_on_the_repositorys_runners(
    bus, results, run_job, nats_url
) -> None:
    github = FakeGitHub()
    await github.start()
    try:
        settings = Settings(github_token=github.token, github_repo=github.repo, github_api_url=github.base_url)
        await bus.publish_job(run_job("H100"))
        (result,) = await _serve_pool(nats_url, "H100", "github", settings, results)
    finally:
        await github.close()
    assert result.result.status.value == "passed" and len(github.dispatches) == 1
