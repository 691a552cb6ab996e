"""What the judge measures of the job by itself: the CPU time of every process but its own, and its socket's speed.

``JobCpu`` reads the CPU time the whole job spent apart from the judge: the job's cgroup counter where the judge
can read it (cgroup v2 ``cpu.stat`` usage_usec, v1 ``cpuacct.usage``) less the judge's own process time; else, in
the job's own PID namespace (the sandbox's, whose init is the judge's parent), every process but the judge and
the init, plus what the init reaped; else the runner and every process below it. Each process counts with its CPU
clock plus what its reaped children left in its ``cutime``/``cstime`` (in clock ticks, read apart: ``read``). A
helper the submission forks does its work on this clock, not beside it, and a double fork (an orphan the
namespace's init adopts) still counts; a child reaped by nobody's wait (SIGCHLD ignored) would not, and the runner's
seccomp filter refuses that (``harness.isolation.seccomp``). ``JobCpu.threads`` reads each thread's CPU time, and
``CallCpu`` turns both into what one call spent: at least its busiest thread's time, and at least all of it over the
job's cores.

``socket_us_per_byte`` times bytes through a socket pair of the judge's own: on CUDA, where a call's spending is the
bracket's wall time, the allowance for its host bytes (``harness.judge.brackets``) is a speed no runner was asked for.
On the CPU the judge measures a byte's cost in the job's CPU time instead (``harness.judge.calibration``).
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

from harness import limits
from harness.isolation import cgroups
from harness.judge import brackets

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

    def threads(self) -> dict[int, int] | None:
        """CPU ns of every thread of the job but the judge's, by thread id (``/proc/<pid>/task/<tid>/schedstat``);
        None where the kernel keeps no such counter. A thread's share is what tells a call's wall time from the
        CPU time of all its threads: one thread cannot spend more than the wall, many can."""
        if self._namespace:
            pids = [int(d) for d in os.listdir(_PROC) if d.isdigit() and int(d) not in (1, os.getpid())]
        else:
            pids = _tree(self.runner_pid)
        found: dict[int, int] = {}
        for pid in pids:
            with contextlib.suppress(OSError):
                for tid in os.listdir(_PROC / str(pid) / "task"):
                    try:
                        found[int(tid)] = int((_PROC / str(pid) / "task" / tid / "schedstat").read_text().split()[0])
                    except FileNotFoundError:
                        if not (_PROC / str(pid) / "task" / tid).exists():
                            continue  # the thread ended meanwhile
                        return None  # no schedstat on this kernel
                    except (OSError, ValueError, IndexError):
                        continue
        return found

    def read(self) -> tuple[int, int]:
        """(ns of the job's live processes, ns their reaped children left them). The second comes in clock ticks
        (``cutime``/``cstime``, 10 ms): a call's own share of it is 0 or a tick, so the judge spreads it over a
        shape's calls (``harness.judge.brackets.unaccounted``); the cgroup counter has no such part."""
        if self._cgroup is not None:
            # the group's counter takes a running task's time only when the scheduler accounts it (a switch, a
            # tick): without the yield the judge's own run since then was missing from it, but not from its own
            # clock, and hundreds of us of the judge's staging came out as the job's
            os.sched_yield()
            with contextlib.suppress(OSError, ValueError):
                return self._cgroup() - time.process_time_ns(), 0
        if self._namespace:
            others = [int(d) for d in os.listdir(_PROC) if d.isdigit() and int(d) not in (1, os.getpid())]
            return _total([_process_ns(1, own=False), *(_process_ns(pid) for pid in others)])
        return _total([_process_ns(pid) for pid in _tree(self.runner_pid)])


class CallCpu:
    """One call on the job's CPU clock: read when the bracket starts (``start``), spent when the answer is read
    (``spent``), so work that goes on beside the judge's reads of the answer counts too."""

    def __init__(self, job: JobCpu) -> None:
        self.job = job
        self.cores = max(1.0, limits.job_cpus())  # the cores the job may keep busy at once (limits: the cgroup's)
        self._from = (0, 0)
        self._threads: dict[int, int] | None = None
        self._waited = self._waited_until = 0

    def start(self) -> None:
        self._from, self._threads = self.job.read(), self.job.threads()
        self._waited = self._waited_ns()  # last: the bracket starts next

    def bracket_ended(self) -> None:
        """The judge has the answer: what was waited for a core since ``start`` is part of the bracket."""
        self._waited_until = self._waited_ns()

    def spent(self, wall_us: float) -> tuple[float, float]:
        """(what the call spent, what children reaped meanwhile left in it), in us: over the threads where the
        judge sees them (``harness.judge.brackets.cpu_spent``), else the job's CPU time capped by ``wall_us``."""
        waited_us = (self._waited_until - self._waited) / 1000
        (live, reaped), threads = self.job.read(), self.job.threads()
        live_us, reaped_us = (live - self._from[0]) / 1000, (reaped - self._from[1]) / 1000
        if threads is None or self._threads is None:
            return brackets.spent(wall_us, live_us + reaped_us), reaped_us
        longest = longest_thread_us(self._threads, threads)
        serial_wall_us = max(0.0, wall_us - waited_us)
        return brackets.cpu_spent(live_us + reaped_us, longest, self.cores, serial_wall_us), reaped_us

    def _waited_ns(self) -> int:
        """How long the runner's main thread has waited for a core (schedstat's run delay): a loaded machine's part
        of the wall time, which no honest kernel's reported time holds. Not the judge's: it wakes while the call
        runs, and its waits then (a kernel keeping every core busy) are no part of the bracket's length."""
        return _run_delay_ns(self.job.runner_pid, self.job.runner_pid)


def longest_thread_us(before: dict[int, int], after: dict[int, int]) -> float:
    """The most CPU time any one live thread of the job spent between two readings of ``threads``: a lower bound of
    the wall time the call took. Threads that ended meanwhile and children reaped meanwhile are no part: they may
    have run side by side (a pool made for the call), and counted as one they flagged honest parallel kernels; run
    one after another, the wall bound of ``brackets.cpu_spent`` counts them."""
    return max([(ns - before.get(tid, 0)) / 1000 for tid, ns in after.items()] + [0.0])


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


def _run_delay_ns(pid: int, tid: int) -> int:
    """A thread's time waiting on a run queue, in ns (0 where it cannot be read)."""
    try:
        return int((_PROC / str(pid) / "task" / str(tid) / "schedstat").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


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
