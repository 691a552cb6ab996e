"""The Modal app module, offline: every function's definition as Modal received it, the image, and the body."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from modal._utils.async_utils import synchronizer
from modal.mount import _Mount

from harness.host.remote import PROTOCOL, payload_for, read_answer
from harness.job import EvalJob
from harness.loading import load_problem
from harness.result import Mode, Status
from runners import modal_app, modal_backend

REPO = Path(__file__).resolve().parents[2]
POOLS = ("T4", "L4", "A10", "L40S", "A100-40GB", "A100-80GB", "H100", "H200", "B200")


def shipped_files(image) -> set[str]:
    """Container paths of the local files an image mounts (Modal keeps them in the image's dependencies)."""
    found, stack = set(), [synchronizer._translate_in(image)]
    while stack:
        obj = stack.pop()
        if isinstance(obj, _Mount):
            found |= {str(remote) for entry in obj.entries for _, remote in entry.get_files_to_upload()}
        stack.extend(obj._deps() if getattr(obj, "_deps", None) else [])
    return found


def test_one_function_per_gpu_type_under_the_name_workers_look_up() -> None:
    assert set(modal_app.functions) == set(POOLS)
    for pool in POOLS:
        assert modal_app.function_name(pool) == modal_backend.function_name(pool)
    assert modal_backend.function_name("A100-80GB") == "run_A100_80GB"


@pytest.mark.parametrize("pool", POOLS)
def test_each_function_has_its_gpu_a_real_time_limit_and_full_isolation(pool: str) -> None:
    info = modal_app.functions[pool].info()  # a local definition: read without any network
    expected_gpu = "H100!" if pool == "H100" else pool
    assert info.gpus == [(expected_gpu, 1)]
    assert info.timeout == modal_app.TIMEOUT_S and info.timeout != 300
    assert info.single_use_containers and info.block_network and info.restrict_modal_access
    assert info.max_retries == 0  # NATS owns retries
    (mount,) = info.volumes.values()
    assert list(info.volumes) == ["/cache"] and mount.read_only  # submissions cannot write the cache


def test_only_the_cache_warmer_writes_the_cache_volume() -> None:
    info = modal_app.warm.info()
    assert info.volumes["/cache"].read_only is False
    assert info.block_network and info.single_use_containers and info.max_retries == 0
    assert "warm_cache" not in {modal_backend.function_name(pool) for pool in POOLS}


def test_the_image_ships_the_whole_harness_and_nothing_else_of_ours() -> None:
    shipped = shipped_files(modal_app.image)
    harness = {
        f"/root/harness/{p.relative_to(REPO / 'harness').as_posix()}"
        for p in (REPO / "harness").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    assert shipped == harness
    assert "/root/harness/host/remote.py" in shipped
    assert modal_app.CUDA_BASE.startswith("nvidia/cuda:") and "-devel-" in modal_app.CUDA_BASE
    assert {p.split("==")[0] for p in modal_app.PACKAGES} == {"torch", "triton", "numpy", "pyyaml"}


def test_non_python_files_of_the_package_ship_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "kernelpack"
    (package / "kernels").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    for name in ("__init__.py", "kernels/flush.cu", "kernels/common.cuh", "limits.json", "__pycache__/x.pyc"):
        (package / name).write_text("x")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert shipped_files(modal_app.build_image("kernelpack")) == {
        "/root/kernelpack/__init__.py",
        "/root/kernelpack/kernels/flush.cu",
        "/root/kernelpack/kernels/common.cuh",
        "/root/kernelpack/limits.json",
    }


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The run_.* function is executing locally")
@pytest.mark.parametrize("pool", POOLS)
def test_each_function_body_evaluates_a_shipped_problem_through_the_real_harness(pool: str, cache_env) -> None:
    problem = REPO / "problems" / "vectoradd"
    job = EvalJob(
        problem=load_problem(problem),
        submission_name="pytorch.py",
        mode=Mode.TEST,
        device="auto",
        submission_source=(problem / "solutions" / "correct" / "pytorch.py").read_text(),
    )
    answer = modal_app.functions[pool].local(payload_for(job))
    decoded = read_answer(answer)
    assert decoded.result is not None and decoded.result.status is Status.PASSED, decoded.error
    assert decoded.result.system.device == "cpu" and decoded.elapsed_s > 0
    assert os.environ["TRITON_CACHE_DIR"].startswith(tempfile.gettempdir())  # a per-job copy


def test_the_body_never_raises_and_says_what_was_wrong(cache_env) -> None:
    old = modal_app.run_job({"v": PROTOCOL + 1, "job": {}})
    assert old["ok"] is False and "protocol" in old["error"]
    broken = modal_app.run_job({"v": PROTOCOL, "job": {"problem": "not a problem"}})
    assert broken["ok"] is False and broken["error"] and "gpu_name" in broken
    assert read_answer(broken).result is None


def test_modal_deploy_imports_the_app_as_a_plain_file(tmp_path: Path) -> None:
    """The real ``modal deploy`` gets as far as authentication: the file imports on its own, outside the package."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODAL_")}
    env.update(MODAL_CONFIG_PATH=str(tmp_path / "modal.toml"), MODAL_SERVER_URL="http://127.0.0.1:9")
    done = subprocess.run(
        [sys.executable, "-m", "modal", "deploy", str(REPO / "runners" / "modal_app.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "Token missing" in done.stdout + done.stderr, done.stdout + done.stderr
