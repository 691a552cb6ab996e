"""GPU pool names, and which pools this host can serve.

Pools are plain names (``H100``, ``A100-80GB``, ``CPU``) used in subjects, leaderboards and replies.
Detection asks ``nvidia-smi`` rather than torch, so the core never imports torch.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess

log = logging.getLogger(__name__)

CPU_POOL = "CPU"
# Marketing name fragments -> pool name, most specific first.
_POOLS = (
    ("H100", "H100"),
    ("H200", "H200"),
    ("B200", "B200"),
    ("A100-SXM4-80GB", "A100-80GB"),
    ("A100 80GB", "A100-80GB"),
    ("A100", "A100-40GB"),
    ("L40S", "L40S"),
    ("L4", "L4"),
    ("T4", "T4"),
    ("A10", "A10"),
)
KNOWN_POOLS = frozenset(pool for _, pool in _POOLS)


def pool_for(gpu_name: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``H100``; unknown cards keep a cleaned-up name."""
    for fragment, pool in _POOLS:
        if fragment in gpu_name:
            return pool
    return re.sub(r"[^A-Za-z0-9-]+", "-", gpu_name.removeprefix("NVIDIA ")).strip("-") or "GPU"


def local_gpu_names() -> list[str]:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("nvidia-smi failed, treating this host as CPU-only: %s", exc)
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def local_pools() -> dict[str, int]:
    """Pool name -> number of local GPUs in it; ``{"CPU": 1}`` on a host without GPUs."""
    pools: dict[str, int] = {}
    for name in local_gpu_names():
        pools[pool_for(name)] = pools.get(pool_for(name), 0) + 1
    return pools or {CPU_POOL: 1}
