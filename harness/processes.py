"""The job's processes as the supervisor sees them from outside, through the host's /proc.

The harness server is a child subreaper (``harness.server``), so everything an evaluation starts stays below
it: a double fork or ``setsid`` moves a process to the server, never out of its subtree. "The job" is
therefore every descendant of the server, and counting, measuring and killing it needs no help from the
job itself. Memory is proportional set size: a fork bomb's copies share their pages, and counting each
copy's resident set in full reported 128 forked copies as 16 GB.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
SWEEP_WAIT_S = 5.0


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    threads: int
    rss_bytes: int


@dataclass(frozen=True)
class Usage:
    processes: int
    tasks: int             # processes and their threads: what RLIMIT_NPROC counts
    memory_bytes: int      # proportional set size, summed


def snapshot() -> dict[int, Process]:
    """Every process on the host (that is still there while we look)."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue        # ended while we looked
        # the command name may hold spaces and parentheses: fields start after the last ')'
        fields = stat[stat.rindex(")") + 2:].split()
        pid = int(entry.name)
        found[pid] = Process(pid=pid, ppid=int(fields[1]), threads=int(fields[17]),
                             rss_bytes=int(fields[21]) * _PAGE_BYTES)
    return found


def descendants(root: int, table: dict[int, Process] | None = None) -> list[Process]:
    """The processes below ``root`` (not ``root`` itself)."""
    table = snapshot() if table is None else table
    children: dict[int, list[Process]] = {}
    for process in table.values():
        children.setdefault(process.ppid, []).append(process)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def usage(root: int) -> Usage:
    below = descendants(root)
    return Usage(processes=len(below), tasks=sum(p.threads for p in below),
                 memory_bytes=sum(_proportional_bytes(p) for p in below))


def sweep(root: int, wait_s: float = SWEEP_WAIT_S) -> int:
    """Kill every process below ``root`` and reap the ones that are its children; how many there were."""
    seen: set[int] = set()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        below = [p for p in descendants(root) if not _zombie(p.pid)]
        reap_children(root)
        if not below:
            break
        for process in below:
            seen.add(process.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, signal.SIGKILL)
        time.sleep(0.01)
    reap_children(root)
    return len(seen)


def reap_children(parent: int, keep: int | None = None) -> None:
    """Collect the ended children of ``parent`` (this process): orphans a subreaper inherited. ``keep``, the
    child whose exit status the caller still wants, is left alone."""
    for process in descendants(parent):
        if process.ppid == parent and process.pid != keep and _zombie(process.pid):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(process.pid, os.WNOHANG)


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):     # already gone
        os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def _proportional_bytes(process: Process) -> int:
    try:
        with open(f"/proc/{process.pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return process.rss_bytes        # no smaps_rollup (before Linux 4.14, some sandboxes): resident size
