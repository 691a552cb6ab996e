"""What the judge measures of the job by itself: the CPU time of every process but its own, and its socket's speed.

``JobCpu`` reads the CPU time the whole job spent apart from the judge: the job's cgroup counter where the judge
can read it (cgroup v2 ``cpu.stat`` usage_usec, v1 ``cpuacct.usage``) less the judge's own process time; else, in
the job's own PID namespace (the sandbox's, whose init is the judge's parent), every process but the judge and
the init, plus what the init reaped; else the runner and every process below it. Each process counts with its CPU
clock plus what its reaped children left in its ``cutime``/``cstime`` (in clock ticks, read apart: ``read``). A
helper the submission forks does its work on this clock, not beside it, and a double fork (an orphan the
namespace's init adopts) still counts; a child reaped by nobody's wait (SIGCHLD ignored) would not, and the runner's
seccomp filter refuses that (``harness.isolation.seccomp``).

``socket_us_per_byte`` times bytes through a socket pair of the judge's own: on CUDA, where a call's spending is the
bracket's wall time, the allowance for its host bytes (``harness.judge.brackets``) is a speed no runner was asked for.
On the CPU the judge measures a byte's cost in the job's CPU time instead (``harness.judge.runner_link``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.isolation import cgroups

_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
_PROBE_BYTES = 4 * 2**20
_PROBE_ROUNDS = 3
_PROC = Path("/proc")


class JobCpu:
    """CPU nanoseconds of the job without the judge, readable as often as a call needs."""

    def __init__(self, runner_pid: int) -> None:
        self.runner_pid = runner_pid
        self._cgroup = _cgroup_counter()
        self._namespace = os.getppid() == 1 and os.getpid() != 1  # the sandbox's init is the judge's parent
        self.source = (
            "the job's cgroup"
            if self._cgroup
            else "the job's PID namespace"
            if self._namespace
            else "the runner's process tree"
        )

    def read_ns(self) -> int:
        return sum(self.read())

    def read(self) -> tuple[int, int]:
        """(ns of the job's live processes, ns their reaped children left them). The second comes in clock ticks
        (``cutime``/``cstime``, 10 ms): a call's own share of it is 0 or a tick, so the judge spreads it over a
        shape's calls (``harness.judge.brackets.unaccounted``); the cgroup counter has no such part."""
        if self._cgroup is not None:
            with contextlib.suppress(OSError, ValueError):
                return self._cgroup() - time.process_time_ns(), 0
        if self._namespace:
            others = [int(d) for d in os.listdir(_PROC) if d.isdigit() and int(d) not in (1, os.getpid())]
            return _total([_process_ns(1, own=False), *(_process_ns(pid) for pid in others)])
        return _total([_process_ns(pid) for pid in _tree(self.runner_pid)])


def socket_us_per_byte() -> float:
    """Microseconds per byte through a socket pair of the judge's own (median of a few rounds of 4 MiB)."""
    block = bytes(_PROBE_BYTES)
    rounds = []
    ours, theirs = socket.socketpair()
    with ours, theirs:
        for _ in range(_PROBE_ROUNDS):
            sender = threading.Thread(target=ours.sendall, args=(block,))
            into = memoryview(bytearray(_PROBE_BYTES))
            started = time.perf_counter_ns()
            sender.start()
            have = 0
            while have < _PROBE_BYTES:
                have += theirs.recv_into(into[have:], _PROBE_BYTES - have)
            sender.join()
            rounds.append((time.perf_counter_ns() - started) / 1000 / _PROBE_BYTES)
    return statistics.median(rounds)


def _cgroup_counter() -> Callable[[], int] | None:
    """A reader of this process's cgroup CPU counter in ns, or None where it cannot be read (a sandbox's /sys)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, group = line.split(":", 2)
        if controllers == "":
            path = Path("/sys/fs/cgroup", group.lstrip("/"), "cpu.stat")
            reader = lambda path=path: _usage_usec(path) * 1000  # noqa: E731
        elif "cpuacct" in controllers.split(","):
            path = Path("/sys/fs/cgroup", controllers, group.lstrip("/"), "cpuacct.usage")
            reader = lambda path=path: int(path.read_text())  # noqa: E731
        else:
            continue
        if Path(group).parent.name != cgroups.PARENT:
            continue  # not a job's own group (harness.isolation.cgroups): it would count other work too
        with contextlib.suppress(OSError, ValueError):
            reader()
            return reader
    return None


def _usage_usec(path: Path) -> int:
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "usage_usec":
            return int(value)
    raise ValueError("no usage_usec")


def _tree(root: int) -> list[int]:
    """``root`` and every live process below it (children through each thread's ``children`` file)."""
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        found.append(pid)
        with contextlib.suppress(OSError):
            for tid in os.listdir(_PROC / str(pid) / "task"):
                with contextlib.suppress(OSError, ValueError):
                    queue.extend(int(c) for c in (_PROC / str(pid) / "task" / tid / "children").read_text().split())
    return found


def _total(parts: list[tuple[int, int]]) -> tuple[int, int]:
    return sum(live for live, _ in parts), sum(reaped for _, reaped in parts)


def _process_ns(pid: int, own: bool = True) -> tuple[int, int]:
    """A process's CPU time (all its threads; ``own``, else 0) and what its reaped children left it; 0s once it is
    gone."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0, 0
    # after the command's ")": state is field 0, utime 11, stime 12, cutime 13, cstime 14
    reaped = (int(fields[13]) + int(fields[14])) * _TICK_NS
    if not own:
        return 0, reaped
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2), reaped  # CPUCLOCK_SCHED of the whole process
    except OSError:  # a zombie: its ticks are all that is left
        return (int(fields[11]) + int(fields[12])) * _TICK_NS, reaped
