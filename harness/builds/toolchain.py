"""The CUDA toolchain the harness builds with: nvcc, the target per GPU, library headers, and a fingerprint.

One table maps a GPU to the one architecture builds target (``ARCHES``): building only for the GPU at hand
is the cheapest speed-up of a first compile. Nothing here initialises CUDA: the GPU's compute capability
comes from ``nvidia-smi`` (or ``$KERNELRANK_CUDA_ARCH`` where there is no GPU, e.g. to compile in CI).

Headers competitors use (CUTLASS and CuTe, ThunderKittens) live under ``$KERNELRANK_CUDA_LIBS`` (default
``/opt/kernelrank/cuda-libs``), one folder per library, as the Modal image and ``docs/cuda.md``'s local set-up
install them; cuBLAS is linked when the toolkit has it. The fingerprint names every input of a build that is
not in its sources (compiler versions, library versions, the harness's own build code), so the compile cache
never serves a module built by another toolchain.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ARCH_ENV = "KERNELRANK_CUDA_ARCH"
LIBS_ENV = "KERNELRANK_CUDA_LIBS"
DEFAULT_LIBS = "/opt/kernelrank/cuda-libs"
QUERY_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Arch:
    capability: str  # "9.0", as nvidia-smi's compute_cap says
    sm: str  # nvcc's -arch value: "sm_90a"
    torch: str  # TORCH_CUDA_ARCH_LIST entry for load_inline builds: "9.0a"
    gpus: str  # for people: which GPUs have it


# The architecture kernelrank builds for, per compute capability: "a" variants where the chip has
# architecture-specific instructions competitors use (wgmma and TMA multicast on Hopper, tcgen05 on Blackwell).
ARCHES = {
    "7.5": Arch("7.5", "sm_75", "7.5", "T4"),
    "8.0": Arch("8.0", "sm_80", "8.0", "A100"),
    "8.6": Arch("8.6", "sm_86", "8.6", "A10, A10G"),
    "8.9": Arch("8.9", "sm_89", "8.9", "L4, L40S"),
    "9.0": Arch("9.0", "sm_90a", "9.0a", "H100, H200"),
    "10.0": Arch("10.0", "sm_100a", "10.0a", "B200"),
}
# Library folders under $KERNELRANK_CUDA_LIBS and the include directories each adds, when present.
LIBRARY_INCLUDES = {"cutlass": ("include", "tools/util/include"), "ThunderKittens": ("include", "prototype")}


@functools.cache
def gpu_arch() -> Arch | None:
    """The architecture of this machine's first visible GPU, or of ``$KERNELRANK_CUDA_ARCH``; None without both."""
    wanted = os.environ.get(ARCH_ENV, "").strip()
    if not wanted:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip() or "0"
        try:
            done = subprocess.run(
                ["nvidia-smi", "-i", visible, "--query-gpu=compute_cap", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=QUERY_TIMEOUT_S,
                check=True,
            )
            wanted = done.stdout.strip().splitlines()[0].strip() if done.stdout.strip() else ""
        except (OSError, subprocess.SubprocessError):
            return None
    return arch_named(wanted)


def arch_named(name: str) -> Arch | None:
    """``"9.0"``, ``"sm_90a"`` or ``"sm_90"`` -> the table's entry; an unknown capability gets a plain sm_XY."""
    name = name.strip().lower()
    for arch in ARCHES.values():
        if name in (arch.capability, arch.sm, arch.sm.rstrip("a"), arch.torch):
            return arch
    digits = name.removeprefix("sm_").rstrip("a").replace(".", "")
    if not digits.isdigit() or len(digits) < 2:
        return None
    capability = f"{digits[:-1]}.{digits[-1]}"
    return Arch(capability, f"sm_{digits}", capability, "unknown GPU")


def nvcc() -> str | None:
    """The nvcc to build with: on PATH, else under $CUDA_HOME or /usr/local/cuda."""
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(candidate := os.path.join(home, "bin", "nvcc"), os.X_OK):
            return candidate
    return None


def cuda_home() -> Path | None:
    compiler = nvcc()
    return Path(compiler).resolve().parent.parent if compiler else None


def library_includes() -> list[str]:
    """Include directories of the header libraries installed under $KERNELRANK_CUDA_LIBS."""
    root = Path(os.environ.get(LIBS_ENV) or DEFAULT_LIBS)
    return [
        str(root / lib / sub) for lib, subs in LIBRARY_INCLUDES.items() for sub in subs if (root / lib / sub).is_dir()
    ]


def has_cublas() -> bool:
    home = cuda_home()
    return home is not None and any(
        (home / lib / "libcublas.so").exists()
        for lib in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib")
    )


@functools.cache
def fingerprint() -> str:
    """What a build's output depends on besides its sources and flags: compilers, torch, libraries, our build code."""
    import torch

    parts = [
        _version([nvcc() or "nvcc", "--version"]),
        _version([os.environ.get("CXX", "c++"), "--version"]),
        torch.__version__,
        str(torch.version.cuda),
        str(has_cublas()),
    ]
    for include in library_includes():
        parts.append(include + ":" + _version_file(Path(include)))
    for module in (
        "build.py",
        "header_tiers.py",
        "header_vocabulary.py",
        "cu_judge.cu",
        "cu_runner.cu",
        "cu_values.h",
    ):  # our build code
        parts.append(hashlib.sha256((Path(__file__).parent / module).read_bytes()).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _version(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"{command[0]}: absent"


def _version_file(include: Path) -> str:
    """The library's version as its install recorded it (``KERNELRANK_VERSION`` beside its folders)."""
    for folder in (include, *include.parents[:2]):
        if (marker := folder / "KERNELRANK_VERSION").is_file():
            return marker.read_text().strip()
    return "unversioned"
