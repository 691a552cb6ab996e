"""What one job may use: memory, CPU, tasks, files; sized per job from the host and the operator's caps.

The supervisor enforces memory and the task count from outside (``harness.host.watch``), the sandbox sets the
resource limits (``set_rlimits``), and where the host allows a cgroup per job (``harness.isolation.cgroups``) the kernel
holds the job to ``tasks`` and ``cpu_cores`` itself. A problem's files have no say in any of these.
"""

from __future__ import annotations

import contextlib
import os
import resource
from dataclasses import dataclass
from pathlib import Path

# Any single file the submission writes (its captured output included) stops growing here; the
# supervisor's flood check (harness.host.watch) acts on captured output well before that. Compilers need
# room: Inductor's C++ builds write temporary files of more than 64 MiB.
FILE_SIZE_LIMIT_BYTES = 1024 * 1024 * 1024
MAX_TASKS = 512  # processes plus threads of one job (a 16-core torch.compile run uses ~120)
# processes of one job (128 sleeping copies of the runner are fine, tests/integrity/hostile/forks_128.py): a
# fork bomb of forked torch processes grows slowly on a busy host and would stay under MAX_TASKS for long
MAX_PROCESSES = 192
OPEN_FILES = 4096
HOST_MEMORY_SHARE = 0.25  # one job may use at most this share of the host's memory
SCRATCH_MB = 1024  # /tmp of a job: working directory, caches, temporary files
MIN_SCRATCH_MB = 256
CPU_GRACE_S = 30
CPUS_VARIABLE = "KERNELRANK_JOB_CPUS"  # the operator's cap on one job's CPU, in cores (a cgroup quota)
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Limits:
    memory_mb: int  # proportional set size of all the job's processes (supervisor)
    cpu_s: int  # CPU seconds per process
    cpu_cores: float = 1.0  # CPU time per second of wall time, all the job's processes together (cgroup)
    tasks: int = MAX_TASKS
    processes: int = MAX_PROCESSES
    open_files: int = OPEN_FILES
    file_bytes: int = FILE_SIZE_LIMIT_BYTES
    scratch_mb: int = SCRATCH_MB

    @classmethod
    def for_job(cls, requested_mb: int, timeout_s: float) -> Limits:
        """The job's memory capped by the host's (a 10 GiB allocation must not pass on a 23 GB host)."""
        memory = max(1, min(requested_mb, int(host_memory_mb() * HOST_MEMORY_SHARE)))
        return cls(
            memory_mb=memory,
            cpu_s=int(timeout_s * (os.cpu_count() or 1)) + CPU_GRACE_S,
            cpu_cores=job_cpus(),
            scratch_mb=max(MIN_SCRATCH_MB, min(SCRATCH_MB, memory // 4)),
        )


def job_cpus() -> float:
    """The cores one job may keep busy: the server's own, or fewer where the operator says so."""
    cores = float(len(os.sched_getaffinity(0)))
    with contextlib.suppress(ValueError):
        if (cap := float(os.environ.get(CPUS_VARIABLE, ""))) > 0:
            return min(cap, cores)
    return cores


def host_memory_mb() -> int:
    """Memory of this host, or of the cgroup it runs in when that is smaller."""
    total = os.sysconf("SC_PHYS_PAGES") * _PAGE_BYTES
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(OSError, ValueError):
            total = min(total, int(Path(limit_file).read_text().strip()))
    return total // 2**20


def set_rlimits(limits: Limits, own_user: bool) -> None:
    """The resource limits of this process and everything it starts; the task count only for a user of the
    job's own (``RLIMIT_NPROC`` counts per user)."""
    caps = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CPU, limits.cpu_s),
    ]
    if own_user:
        caps.append((resource.RLIMIT_NPROC, limits.tasks))
    for which, value in caps:
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


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
