"""The environment of the harness server and of each job: which variables cross over, and the job's own folders.

The caller starts the server with a scrubbed copy of its environment (``scrubbed_environment``): the names the
GPU stack, compilers, caches and the harness's own settings need, and nothing else, so tokens, seeds and URLs
never reach a submission. In the sandbox (``harness.isolation.sandbox``) the worker then gets a HOME, temporary folder
and build caches of its own (``job_environment``), so nothing one job writes is seen by the next.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from harness.isolation import rootfs
from harness.isolation.cgroups import CGROUPS_VARIABLE
from harness.isolation.staging import Stage
from harness.limits import CPUS_VARIABLE

# Names the GPU stack, compilers and caches need; everything else (tokens, seeds, URLs) is dropped.
ENV_KEEP = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "LD_LIBRARY_PATH",
        "LIBRARY_PATH",
        "CPATH",
        "CC",
        "CXX",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "CUDA_HOME",
        "CUDA_PATH",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
        "TORCH_HOME",
        "TORCH_EXTENSIONS_DIR",
        "TORCHINDUCTOR_CACHE_DIR",
        "TORCH_CUDA_ARCH_LIST",
        "TRITON_CACHE_DIR",
        "TRITON_HOME",
        "XDG_CACHE_HOME",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "MAX_JOBS",
        # builds and the compile cache (harness.builds.toolchain, harness.builds.cache), measured peaks (harness.device)
        "KERNELRANK_CUDA_ARCH",
        "KERNELRANK_CUDA_LIBS",
        "KERNELRANK_BUILD_CACHE",
        "KERNELRANK_BUILD_CACHE_MB",
        "KERNELRANK_COMPILE_TIMEOUT_S",
        "KERNELRANK_PEAKS_FILE",
        "KERNELRANK_PROGRESS_EVERY_S",  # how often a long call reports that it still runs (harness.liveness)
        "KERNELRANK_HARNESS_LOG",  # the server's log level (harness.host.server_process)
        CPUS_VARIABLE,  # read by the server (harness.limits)
        CGROUPS_VARIABLE,
    }
)
ENV_KEEP_PREFIXES = ("LC_",)
# Set for the harness server and everything below it, before torch is imported (OpenMP reads them when it loads):
# idle OpenMP threads sleep instead of spinning, so a job's CPU time is the work it did. Spinning threads filled
# every wait for a core with CPU time, and on a loaded machine the judge's CPU clock read honest calls as longer
# than their reported time (untrusted time).
THREADING_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}


def scrubbed_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k in ENV_KEEP or k.startswith(ENV_KEEP_PREFIXES)}


def job_environment(stage: Stage, isolated: bool) -> None:
    """HOME, temporary files and every build cache of the job, in its own scratch space."""
    scratch = Path(rootfs.SCRATCH) if isolated else stage.scratch
    home, cache = (Path(rootfs.HOME), Path(rootfs.CACHE)) if isolated else (scratch / "home", scratch / "cache")
    for folder in (home, cache):
        folder.mkdir(exist_ok=True)
    os.environ.update(
        {
            "HOME": str(home),
            "TMPDIR": str(scratch),
            "XDG_CACHE_HOME": str(cache),
            "USER": "kernelrank",
            "LOGNAME": "kernelrank",
            "TRITON_CACHE_DIR": str(cache / "triton"),
            "TRITON_HOME": str(home),
            "TORCH_EXTENSIONS_DIR": str(cache / "torch_extensions"),
            "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
            "CUDA_CACHE_PATH": str(cache / "nv"),
            "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        }
    )  # JAX would otherwise take 75 % of the GPU's memory
    tempfile.tempdir = None  # the server already asked for one: look again
