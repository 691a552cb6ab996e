"""The job's processes as the supervisor sees them from outside, through the host's /proc.

The harness server is a child subreaper (``harness.host.server_process``), so everything an evaluation starts
stays below it: a double fork or ``setsid`` moves a process to the server, never out of its subtree. "The job" is
therefore every descendant of the server, and counting, measuring and killing it needs no help from the
job itself. Memory is proportional set size: a fork bomb's copies share their pages, and counting each
copy's resident set in full reported 128 forked copies as 16 GB.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
SWEEP_GRACE_S = 2.0
SWEEP_WAIT_S = 30.0  # ends as soon as all are gone; 200 dying torch processes took over 10 s on a busy 2-core host
EXACT_PROCESSES = 8
SAMPLED_PROCESSES = 8


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    threads: int
    rss_bytes: int


@dataclass(frozen=True)
class Usage:
    processes: list[Process]
    tasks: int  # processes and their threads: what RLIMIT_NPROC counts
    resident_bytes: int  # resident sets summed: an upper bound of the memory they use

    def memory_bytes(self, exact: int = EXACT_PROCESSES, sampled: int = SAMPLED_PROCESSES) -> int:
        """Proportional set sizes summed. Reading one costs a walk of the process's page tables (~6 ms for a
        forked torch process), so only the ``exact`` largest processes are read one by one; for the rest,
        ``sampled`` of them at random give the share of their resident set that is really theirs."""
        ordered = sorted(self.processes, key=lambda p: p.rss_bytes, reverse=True)
        largest, rest = ordered[:exact], ordered[exact:]
        total = sum(_proportional_bytes(p) for p in largest)
        if len(rest) <= sampled:
            return total + sum(_proportional_bytes(p) for p in rest)
        sample = random.sample(rest, sampled)
        sample_rss = sum(p.rss_bytes for p in sample) or 1
        share = sum(_proportional_bytes(p) for p in sample) / sample_rss
        return total + int(share * sum(p.rss_bytes for p in rest))


class MemoryMeter:
    """Measures the memory of everything below ``root`` in a thread of its own, every ``every_s``: while
    processes fork, one proportional-size read can wait a third of a second on the process's memory map, and
    the supervisor's loop must keep watching time, tasks and records meanwhile. ``latest_bytes`` is the last
    figure (resident sets while they stay under ``threshold_bytes``, which they bound from above)."""

    def __init__(self, root: int, threshold_bytes: int, every_s: float, spare: int | None = None) -> None:
        self.latest_bytes = 0
        self._root, self._threshold, self._every_s, self._spare = root, threshold_bytes, every_s, spare
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-meter", daemon=True)

    def __enter__(self) -> MemoryMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            measured = usage(self._root, spare=self._spare)
            over = measured.resident_bytes > self._threshold
            self.latest_bytes = measured.memory_bytes() if over else measured.resident_bytes


def snapshot() -> dict[int, Process]:
    """Every process on the host (that is still there while we look)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:  # no pathlib: this runs every 50 ms
                stat = file.read().decode(errors="replace")
        except OSError:
            continue  # ended while we looked
        # the command name may hold spaces and parentheses: fields start after the last ')'
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(name)
        found[pid] = Process(
            pid=pid, ppid=int(fields[1]), threads=int(fields[17]), rss_bytes=int(fields[21]) * _PAGE_BYTES
        )
    return found


def descendants(root: int, table: dict[int, Process] | None = None, spare: int | None = None) -> list[Process]:
    """The processes below ``root`` (not ``root`` itself), except ``spare`` and those below it (the harness
    server's zygote, which belongs to no job)."""
    table = snapshot() if table is None else table
    children: dict[int, list[Process]] = {}
    for process in table.values():
        children.setdefault(process.ppid, []).append(process)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child.pid == spare:
                continue
            found.append(child)
            todo.append(child.pid)
    return found


def usage(root: int, table: dict[int, Process] | None = None, spare: int | None = None) -> Usage:
    below = descendants(root, table, spare)
    return Usage(processes=below, tasks=sum(p.threads for p in below), resident_bytes=sum(p.rss_bytes for p in below))


def sweep(root: int, grace_s: float = SWEEP_GRACE_S, wait_s: float = SWEEP_WAIT_S, spare: int | None = None) -> int:
    """Kill every process still below ``root`` after ``grace_s`` (processes already killed take a moment to go)
    and reap the ones that are its children; returns how many had to be killed."""
    deadline = time.monotonic() + grace_s
    while (alive := _alive_below(root, spare)) and time.monotonic() < deadline:
        reap_children(root)
        time.sleep(0.01)
    killed = {p.pid for p in alive}
    deadline = time.monotonic() + wait_s
    while alive and time.monotonic() < deadline:
        for process in alive:
            killed.add(process.pid)
            kill(process.pid)
        time.sleep(0.01)
        reap_children(root)
        alive = _alive_below(root, spare)
    reap_children(root)
    return len(killed)


def _alive_below(root: int, spare: int | None) -> list[Process]:
    return [p for p in descendants(root, spare=spare) if not _zombie(p.pid)]


def reap_children(parent: int, keep: int | None = None, table: dict[int, Process] | None = None) -> None:
    """Collect the ended children of ``parent`` (this process): orphans a subreaper inherited. ``keep``, the
    child whose exit status the caller still wants, is left alone."""
    for process in descendants(parent, table):
        if process.ppid == parent and process.pid != keep and _zombie(process.pid):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(process.pid, os.WNOHANG)


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def _proportional_bytes(process: Process) -> int:
    """Proportional set size; 0 while it cannot be read (a process being forked or ending is mid-change, and
    counting its full resident set instead counted 128 forked copies as 6 GB). The next poll measures it."""
    try:
        with open(f"/proc/{process.pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0 if _has_rollup() else process.rss_bytes  # no smaps_rollup at all (before Linux 4.14): resident


def _has_rollup() -> bool:
    return os.path.exists("/proc/self/smaps_rollup")
