"""Isolation of the submission's process: scrubbed environment, private descriptors, limits, group kill.

The harness server starts with ``scrubbed_environment`` (no tokens, no seeds), so every child it forks
inherits nothing secret. A forked child calls ``enter_child`` before anything else: its own session (so
the whole group can be killed), stdout/stderr redirected to capped files, every other descriptor closed
except the result pipe, no core dumps, and its working directory set to the staged files.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

from harness.staging import Stage

# Names the GPU stack, compilers and caches need; everything else (tokens, seeds, URLs) is dropped.
ENV_KEEP = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "CC", "CXX",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
    "TORCH_HOME", "TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_CUDA_ARCH_LIST",
    "TRITON_CACHE_DIR", "TRITON_HOME", "XDG_CACHE_HOME",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS",
})
ENV_KEEP_PREFIXES = ("LC_",)

# Any single file the submission writes (its captured output included) stops growing here; the
# supervisor's flood check (harness.supervisor) acts well before that.
FILE_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def scrubbed_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k in ENV_KEEP or k.startswith(ENV_KEEP_PREFIXES)}


def enter_child(stage: Stage, keep_fd: int, stdout_fd: int, stderr_fd: int) -> None:
    """First steps of a freshly forked child; after this only ``keep_fd`` links it to the harness."""
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((devnull, 0), (stdout_fd, 1), (stderr_fd, 2)):
        os.dup2(source, target)
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT_BYTES, FILE_SIZE_LIMIT_BYTES))
    os.chdir(stage.workdir)
    sys.path.insert(0, str(stage.workdir))
    sys.dont_write_bytecode = True       # the working directory keeps exactly the staged files
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True)   # a crash must not swallow what was printed before it


def limit_address_space(extra_mb: int) -> None:
    """Cap virtual memory at its current size plus ``extra_mb``, so a huge allocation fails at once.

    CPU only: the CUDA driver reserves far more address space than it ever backs with memory.
    """
    limit = _vm_size_bytes() + extra_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _vm_size_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def group_rss_bytes(pgid: int) -> int:
    """Resident memory of every process in group ``pgid`` (the child and whatever it started)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue        # the process ended while we looked
        # the command name may hold spaces and parentheses: fields start after the last ')'
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid:                  # field 5 of stat: process group
            total += int(fields[21]) * _PAGE_BYTES  # field 24: resident set size in pages
    return total


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):     # already gone
        os.killpg(pgid, signal.SIGKILL)
