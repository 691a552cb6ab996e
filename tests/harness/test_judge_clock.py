"""What the judge measures of the job by itself (harness.judge.judge_clock), on real processes."""

from __future__ import annotations

import os
import threading
import time

import pytest

from harness.judge import brackets, judge_clock


def _burn_in_child() -> tuple[int, int, int]:
    """Fork a child that does some CPU work and reports its own CPU nanoseconds; returns its pid, those nanoseconds
    and the descriptor that lets it end."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        started = time.thread_time_ns()
        total = 0
        for step in range(300_000):
            total += step
        os.write(write, (time.thread_time_ns() - started).to_bytes(8, "little"))
        os.read(read, 1)  # stay alive (not reaped) until the test is done
        os._exit(0)
    used = int.from_bytes(os.read(read, 8), "little")
    return pid, used, write


def test_a_helper_process_counts_on_the_jobs_cpu_clock():
    clock = judge_clock.JobCpu(os.getpid())
    assert clock.source == "the runner's process tree"  # pytest is not a sandbox's judge
    before = clock.read_ns()
    pid, used, release = _burn_in_child()
    after = clock.read_ns()
    os.write(release, b"x")
    os.waitpid(pid, 0)
    assert after - before >= 0.9 * used > 0  # the child's work, read from outside


def test_what_a_reaped_child_spent_still_counts():
    clock = judge_clock.JobCpu(os.getpid())
    before = clock.read_ns()
    pid, used, release = _burn_in_child()
    os.write(release, b"x")
    os.waitpid(pid, 0)  # gone: its time is in our cutime/cstime, in ticks
    assert clock.read_ns() - before >= used - 2 * judge_clock._TICK_NS


def test_the_judges_socket_speed_is_its_own_measure():
    us_per_byte = judge_clock.socket_us_per_byte()
    assert 0 < us_per_byte < 1  # faster than 1 MB/s on any machine that runs the harness


def test_each_thread_of_the_job_is_seen_and_the_busiest_bounds_the_call():
    """A live thread's work bounds the call; one that ended before the answer is the process's, and bounds it
    through the wall (``brackets.cpu_spent``)."""
    clock = judge_clock.JobCpu(os.getpid())
    before, live_from = clock.threads(), clock.read()[0]
    if before is None:
        pytest.skip("this kernel keeps no per-thread schedstat")
    worked: list[int] = []

    def work() -> None:
        started = time.thread_time_ns()
        sum(range(2_000_000))
        worked.append(time.thread_time_ns() - started)

    worker = threading.Thread(target=work)
    wall_from = time.perf_counter_ns()
    worker.start()
    worker.join()
    wall_us = (time.perf_counter_ns() - wall_from) / 1000
    after, live_to = clock.threads(), clock.read()[0]
    assert after is not None and threading.get_native_id() in after  # the worker may linger a moment, or not
    longest = judge_clock.longest_thread_us(before, after)
    spent = brackets.cpu_spent((live_to - live_from) / 1000, longest, cores=64.0, wall_us=wall_us)
    assert spent >= 0.9 * worked[0] / 1000 > 0


def test_the_longest_part_is_a_live_thread():
    assert judge_clock.longest_thread_us({1: 0}, {1: 4000, 2: 9000}) == 9.0
    assert judge_clock.longest_thread_us({1: 0, 3: 0}, {1: 4000}) == 4.0  # thread 3 ended: not a part of its own
    assert judge_clock.longest_thread_us({}, {}) == 0.0  # children reaped meanwhile count through the wall bound


def _spin_on(core: int, seconds: float, nice: int = 0) -> None:
    os.sched_setaffinity(0, {core})
    os.nice(nice)
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pass


def test_the_runners_waits_for_a_core_are_read_from_its_main_thread():
    """The wall bound takes out what the runner's main thread waited on a run queue (schedstat's second field, not
    its CPU time): a process at nice 10 beside a busy one on the same core waits far longer than it runs."""
    core = min(os.sched_getaffinity(0))
    read, write = os.pipe()
    rival = os.fork()
    if rival == 0:
        _spin_on(core, 0.6)
        os._exit(0)
    waiter = os.fork()
    if waiter == 0:
        waited, ran = judge_clock._run_delay_ns(os.getpid(), os.getpid()), time.thread_time_ns()
        _spin_on(core, 0.3, nice=10)
        waited, ran = judge_clock._run_delay_ns(os.getpid(), os.getpid()) - waited, time.thread_time_ns() - ran
        os.write(write, f"{waited} {ran}".encode())
        os._exit(0)
    try:
        waited_ns, ran_ns = (int(n) for n in os.read(read, 64).split())
    finally:
        for pid in (waiter, rival):
            os.waitpid(pid, 0)
        os.close(read)
        os.close(write)
    assert waited_ns > 3 * ran_ns and waited_ns > 100_000_000
    assert judge_clock._run_delay_ns(os.getpid(), 2**22 + 1) == 0  # no such thread: nothing to take out
