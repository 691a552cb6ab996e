"""The Modal app: one function per GPU type, each evaluating one job in a fresh container of its own.

Deployed with ``kernelrank modal deploy`` (``modal deploy`` of this file, run as a plain file so only it and
the harness ship); workers call the functions by name (``runners.modal_backend``) and never import it.
The image is a CUDA devel base (``nvcc`` and ``load_inline`` work) with Python, torch, triton, numpy and
pyyaml, plus the ``harness`` package with all its files, non-Python ones included. Nothing from core,
storage, adapters or the rest of runners goes in.

Every ``run_<GPU>`` function:

- answers with ``harness.host.remote.answer``: the same harness entry as the local runner, the submission in
  its own isolated process; it returns plain data and never raises (the worker unpickles what comes back);
- has a time limit of ``KERNELRANK_MODAL_TIMEOUT_S`` (never Modal's 300 s default; a job whose own limit
  needs more gets a longer variant from the worker) and no Modal retries: NATS owns retries;
- gets a fresh container per job, no network, and no access to other Modal resources;
- sees the compile cache Volume read-only at ``/cache`` (one folder per GPU model and torch version) and
  copies its folder into per-job directories, so nothing a submission compiles or writes outlives its
  container. Only ``warm_cache``, which an admin calls with trusted jobs (``kernelrank modal warm``: the
  problems' own references), writes the Volume, and commits it explicitly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import modal

STARTED = time.monotonic()  # imported as the container starts: the container's own clock for elapsed_s

APP_NAME = os.environ.get("KERNELRANK_MODAL_APP", "kernelrank")
TIMEOUT_S = int(os.environ.get("KERNELRANK_MODAL_TIMEOUT_S", "1200"))

# Pool name -> Modal GPU string. "H100!" pins the chip: plain "H100" lets Modal place the job on an H200.
GPU_TYPES = {
    "T4": "T4",
    "L4": "L4",
    "A10": "A10",
    "L40S": "L40S",
    "A100-40GB": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100": "H100!",
    "H200": "H200",
    "B200": "B200",
}

# torch 2.11 wheels are built against CUDA 13.0: the devel base's nvcc must match for load_inline.
CUDA_BASE = "nvidia/cuda:13.0.2-devel-ubuntu24.04"
PYTHON_VERSION = "3.12"
PACKAGES = ("torch==2.11.0", "triton==3.6.0", "numpy", "pyyaml")
# JAX beside torch and Triton for Python submissions, on the same CUDA 13 runtime.
JAX_PACKAGES = ("jax[cuda13]==0.8.1",)
# Header libraries of .cu submissions, at pinned tags, where harness.builds.toolchain looks for them; and Nsight
# Compute for profile mode (ncu), from the CUDA repository the devel base already carries.
CUDA_LIBS = "/opt/kernelrank/cuda-libs"
LIBRARIES = {
    "cutlass": ("https://github.com/NVIDIA/cutlass.git", "v4.2.1"),
    "ThunderKittens": ("https://github.com/HazyResearch/ThunderKittens.git", "v2.0.0"),
}
NCU_PACKAGE = "cuda-nsight-compute-13-0"
HARNESS_IGNORE = ["**/__pycache__", "**/*.pyc"]  # everything else of harness/ ships, not only *.py

CACHE_PATH = "/cache"
# Cache directories the harness's child processes honour (harness.isolation.sandbox keeps these variables).
CACHE_DIRS = {
    "triton": "TRITON_CACHE_DIR",
    "torch_extensions": "TORCH_EXTENSIONS_DIR",
    "inductor": "TORCHINDUCTOR_CACHE_DIR",
    "builds": "KERNELRANK_BUILD_CACHE",
}


def function_name(pool: str) -> str:
    """``A100-80GB`` -> ``run_A100_80GB``: the name workers look the function up by."""
    return "run_" + "".join(c if c.isalnum() else "_" for c in pool)


def build_image(harness_package: str = "harness") -> modal.Image:
    """The runner image: heavy layers first (cached across deploys), our source last (mounted, not built)."""
    clones = [
        f"git clone --depth 1 --branch {tag} {url} {CUDA_LIBS}/{name} && "
        f"echo {tag} > {CUDA_LIBS}/{name}/KERNELRANK_VERSION && rm -rf {CUDA_LIBS}/{name}/.git"
        for name, (url, tag) in LIBRARIES.items()
    ]
    return (
        modal.Image.from_registry(CUDA_BASE, add_python=PYTHON_VERSION)
        .apt_install("git", NCU_PACKAGE)
        .run_commands(*clones)
        .pip_install(*PACKAGES)
        .pip_install(*JAX_PACKAGES)
        .env(
            {
                "KERNELRANK_MODAL_APP": APP_NAME,
                "KERNELRANK_MODAL_TIMEOUT_S": str(TIMEOUT_S),
                "KERNELRANK_CUDA_LIBS": CUDA_LIBS,
                "PATH": "/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            }
        )
        .add_local_python_source(harness_package, ignore=HARNESS_IGNORE)
    )


app = modal.App(APP_NAME)
image = build_image()
cache = modal.Volume.from_name(f"{APP_NAME}-compile-cache", create_if_missing=True)

ISOLATION: dict[str, Any] = {
    "single_use_containers": True,
    "block_network": True,
    "restrict_modal_access": True,
    "retries": 0,
}


def run_job(payload: dict[str, Any]) -> dict[str, Any]:
    """Evaluate one job with the harness on this container's GPU; returns ``harness.host.remote``'s answer."""
    try:
        from harness.host.remote import answer

        _use_caches(_copy_of(_cache_for_this_machine()))
    except Exception as exc:  # a broken image still answers, with what broke
        return {
            "v": 1,
            "ok": False,
            "error": f"the runner image is broken: {type(exc).__name__}: {exc}",
            "gpu_name": "",
            "elapsed_s": time.monotonic() - STARTED,
        }
    return answer(payload, started=STARTED)


def warm_cache(payload: dict[str, Any]) -> dict[str, Any]:
    """Evaluate a trusted job with the caches on the Volume itself, then commit what it compiled."""
    from harness.host.remote import answer

    _use_caches(_cache_for_this_machine())
    reply = answer(payload, started=STARTED)
    cache.commit()
    return reply


def _cache_for_this_machine() -> Path:
    """One cache per GPU model and torch version: an extension built for one chip does not load on another."""
    from importlib.metadata import version

    from harness.host.remote import gpu_name

    key = f"{gpu_name() or 'no-gpu'}-torch-{version('torch')}"
    return Path(CACHE_PATH) / "".join(c if c.isalnum() or c in ".-" else "-" for c in key)


def _copy_of(cache_root: Path) -> Path:
    """Per-job writable copies of the read-only cache: what a submission writes there dies with the container."""
    work = Path(tempfile.mkdtemp(prefix="kernelrank-cache-"))
    for name in CACHE_DIRS:
        source = cache_root / name
        if source.is_dir():
            shutil.copytree(source, work / name, symlinks=True)
    return work


def _use_caches(root: Path) -> None:
    for name, variable in CACHE_DIRS.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(root / name)


functions = {
    pool: app.function(
        image=image,
        gpu=gpu,
        name=function_name(pool),
        timeout=TIMEOUT_S,
        volumes={CACHE_PATH: cache.with_mount_options(read_only=True)},
        **ISOLATION,
    )(run_job)
    for pool, gpu in GPU_TYPES.items()
}

# One function for every GPU type: the caller picks the GPU with ``with_options(gpu=...)``. It runs only the
# problems' own references (admins' code), and may use Modal's API: committing the Volume is a Modal call.
warm = app.function(
    image=image,
    gpu="T4",
    name="warm_cache",
    timeout=TIMEOUT_S,
    volumes={CACHE_PATH: cache},
    **{**ISOLATION, "restrict_modal_access": False},
)(warm_cache)
