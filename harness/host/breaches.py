"""The limits a job can break while it runs, each with the sentence its author reads.

The supervisor's watch (``harness.host.watch``) asks these every poll; each answers None, or the ``Failure`` that
stops the job. ``where`` is what the job was doing ("testing 2 of 6", say), so the sentence says when it happened.
"""

from __future__ import annotations

import os

from harness.isolation import cgroups
from harness.isolation.processes import Usage
from harness.isolation.staging import Stage
from harness.limits import Limits
from harness.result import Failure, FailureKind

FLOOD_BYTES = 16 * 1024 * 1024  # captured stdout or stderr beyond this is a flood
_IN_A_LOOP = "Do not start processes or threads in a loop."


def kernel_refused(group: cgroups.JobGroup, limits: Limits, where: str) -> Failure | None:
    """The kernel's own counts of the job's cgroup: forks it refused (``pids.max``), processes running."""
    if refused := group.refused_forks():
        what = f"the kernel refused {refused} of its new processes or threads beyond {limits.tasks}"
    elif (running := group.count()) > limits.processes:
        what = f"it ran {running} processes, more than the limit of {limits.processes}"
    else:
        return None
    return Failure(FailureKind.RESOURCE_LIMIT, f"The submission was stopped while {where}: {what}. {_IN_A_LOOP}")


def too_many_tasks(usage: Usage, limits: Limits, where: str) -> Failure | None:
    """Processes and threads counted below the server (where the job has no cgroup to count them)."""
    if usage.tasks < limits.tasks and len(usage.processes) <= limits.processes:
        return None
    return Failure(
        FailureKind.RESOURCE_LIMIT,
        f"The submission ran {len(usage.processes)} processes with {usage.tasks} threads in all, reaching the limit "
        f"of {limits.processes} processes or {limits.tasks} threads, and was stopped while {where}. {_IN_A_LOOP}",
    )


def too_much_memory(used_bytes: int, limits: Limits, where: str) -> Failure | None:
    if used_bytes <= limits.memory_mb * 2**20:
        return None
    return Failure(
        FailureKind.OUT_OF_MEMORY,
        f"The submission's processes used more than {limits.memory_mb} MB of host memory and were stopped while "
        f"{where}. Allocate less memory.",
    )


def flooded(stage: Stage, where: str) -> Failure | None:
    if written_bytes(stage) <= FLOOD_BYTES:
        return None
    return Failure(
        FailureKind.OUTPUT_FLOOD,
        f"The submission wrote more than {FLOOD_BYTES // 2**20} MiB of output and was stopped while {where}. "
        "Print less: output is capped.",
    )


def written_bytes(stage: Stage) -> int:
    """The larger of the job's captured stdout and stderr."""
    return max(_size(stage.stdout_path), _size(stage.stderr_path))


def _size(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
