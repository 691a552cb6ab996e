"""The limits a job can break while it runs, each with the sentence its author reads.

The supervisor's watch (``harness.host.watch``) asks these every poll; each answers None, or the ``Failure`` that
stops the job. ``where`` is what the job was doing ("testing 2 of 6", say), so the sentence says when it happened.
Files count as the disk they hold, not only their size: a file's blocks can exceed its size.
"""

from __future__ import annotations

import os

from harness.isolation import cgroups
from harness.isolation.processes import Usage
from harness.isolation.staging import Stage
from harness.limits import Limits
from harness.result import Failure, FailureKind

FLOOD_BYTES = 16 * 1024 * 1024  # captured stdout or stderr beyond this is a flood
# A growing file may hold blocks past its end that nobody asked for: XFS preallocates about the file's size again
# while it is written to. So blocks count at 1/PREALLOCATION: reserved disk is still bounded (twice a cap at most).
PREALLOCATION = 2
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
    """The larger of the job's captured stdout and stderr, each as the disk it holds (``_held``)."""
    return max(_held(stage.stdout_path), _held(stage.stderr_path))


def too_much_disk(stage: Stage, limits: Limits, where: str) -> Failure | None:
    """The job's own folders in blocks, against its scratch cap: for a job without namespaces, whose working
    directory and scratch are on the host's disk (in the sandbox they are a size-capped tmpfs, which counts
    reserved blocks itself)."""
    if (held := _folder_bytes(stage.workdir) + _folder_bytes(stage.scratch)) <= limits.scratch_mb * 2**20:
        return None
    return Failure(
        FailureKind.RESOURCE_LIMIT,
        f"The submission's files held {held // 2**20} MiB of disk, more than the limit of {limits.scratch_mb} MiB, "
        f"and it was stopped while {where}. Write less to files: the working directory, temporary files and "
        "caches share that limit.",
    )


def _held(path: os.PathLike[str] | str) -> int:
    """What a file counts as: its size, or its blocks where they are more (``fallocate`` with ``FALLOC_FL_KEEP_SIZE``
    reserves blocks and leaves the size), over ``PREALLOCATION``."""
    try:
        status = os.lstat(path)
    except OSError:
        return 0
    return max(status.st_size, status.st_blocks * 512 // PREALLOCATION)


def _folder_bytes(folder: os.PathLike[str] | str) -> int:
    """Everything below ``folder``, links not followed (a loop, not a recursion: the job decides how deep it goes)."""
    total, pending = 0, [os.fspath(folder)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    total += _held(entry.path)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:  # gone meanwhile, or beyond the longest path the kernel takes
            continue
    return total
