"""The runner's seccomp filter (harness.isolation.seccomp), installed in a forked child of the test.

A stand-in judge is forked first; once the filtered runner is forked, the judge starts a thread (its id is then
above the runner's, as the judge's later threads are in the sandbox) and the runner aims every call that names a
process at that thread, at the judge, at its own threads and at itself. Each probe is harmless where it is allowed.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import platform
import resource
import signal
import socket
import struct
import tempfile
import threading
import traceback

import pytest

from harness.isolation import linux, seccomp

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="no filter for this arch")

_COLUMN = 0 if platform.machine() == "x86_64" else 1
_NOBODY = 1_999_999_999  # a user id no process has: PRIO_USER and IOPRIO_WHO_USER probes touch nothing
_RESVSP64 = 0x4030582A  # FS_IOC_RESVSP64: fallocate(FALLOC_FL_KEEP_SIZE) through an ioctl
_KEEP_SIZE = 1
_SIGINFO = struct.pack("iii", 0, 0, -1) + bytes(116)  # signal 0, si_code SI_QUEUE: a probe that delivers nothing
_SCHED_ATTR = struct.pack("IIQiIQQQ", 48, 0, 0, 0, 0, 0, 0, 0)  # SCHED_OTHER at nice 0

JUDGE_EXPECTED = {
    "kill the judge": "EPERM",
    "kill the judge's later thread": "EPERM",
    "kill everything": "EPERM",
    "tkill the judge's thread": "EPERM",
    "tgkill the judge's thread": "EPERM",
    "rt_sigqueueinfo the judge's thread": "EPERM",
    "rt_tgsigqueueinfo the judge's thread": "EPERM",
    "pidfd_open the judge": "EPERM",
    "pidfd_send_signal": "EPERM",
    "prlimit64 the judge's thread": "EPERM",
    "sched_setaffinity the judge's thread": "EPERM",
    "sched_setscheduler the judge's thread": "EPERM",
    "sched_setparam the judge's thread": "EPERM",
    "sched_setattr the judge's thread": "EPERM",
    "setpriority the judge's thread": "EPERM",
    "setpriority a user": "EPERM",
    "ioprio_set the judge's thread": "EPERM",
    "ioprio_set a user": "EPERM",
    "migrate_pages the judge's thread": "EPERM",
    "move_pages the judge's thread": "EPERM",
    "join the judge's process group": "EPERM",
    "make the judge a pipe's owner (its SIGIO)": "EPERM",
    "make the judge's thread an owner (F_SETOWN_EX)": "EPERM",
    "make the judge a socket's owner (FIOSETOWN)": "EPERM",
    "fork a child of the judge": "EPERM",
    "ptrace the judge": "EPERM",
    "process_vm_readv the judge": "EPERM",
}
OWN_EXPECTED = {
    "signal itself": "ok",
    "signal its group": "ok",
    "signal its group by id": "ok",
    "signal its own thread": "ok",
    "signal its child by id": "EPERM",
    "re-limit itself": "ok",
    "re-limit itself by id": "ok",
    "pin itself": "ok",
    "renice itself": "ok",
    "a group of its own": "ok",
    "own a pipe (its SIGIO)": "ok",
}
SURFACE_EXPECTED = {
    "new user namespace": "EPERM",
    "mount": "EPERM",
    "bpf": "EPERM",
    "io_uring_setup": "EPERM",
    "keyctl": "EPERM",
    "open_tree_attr": "EPERM",
    "fallocate, keeping the size": errno.errorcode[errno.EOPNOTSUPP],
    "reserve through FS_IOC_RESVSP64": errno.errorcode[errno.EOPNOTSUPP],
    "posix_fallocate (written out instead)": "ok",
    "disk held by a 4 KiB file": "ok",
    "ignore SIGCHLD (children reaped unseen)": "EPERM",
    "catch SIGCHLD with SA_NOCLDWAIT": "EPERM",
    "read SIGCHLD's action": "ok",
    "ignore another signal": "ok",
}


def _syscall(name: str, *arguments) -> None:
    numbers = seccomp.DENIED.get(name) or seccomp.DENIED_TOO.get(name) or seccomp.ON_ITSELF[name][0]
    _checked(_libc().syscall(numbers[_COLUMN], *arguments))


def _rt_sigaction(signum: int, action) -> None:
    """The raw call (libc's sigaction adds a restorer); the old action is read back, 8 bytes of signal mask."""
    old = ctypes.create_string_buffer(64)
    _checked(_libc().syscall(seccomp.RT_SIGACTION[_COLUMN], signum, action, old, 8))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _checked(returned: int) -> None:
    if returned < 0:
        raise OSError(ctypes.get_errno(), "syscall")


class _Probes:
    """What each probe answers in this (filtered) process: "ok" or the error's name."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}

    def __call__(self, name: str, action) -> None:
        try:
            action()
            self.answers[name] = "ok"
        except OSError as exc:
            self.answers[name] = errno.errorcode.get(exc.errno, str(exc.errno))


def _probe_the_judge(probe: _Probes, judge: int, thread: int) -> None:
    libc, info, attr = _libc(), ctypes.create_string_buffer(_SIGINFO), ctypes.create_string_buffer(_SCHED_ATTR)
    old = ctypes.create_string_buffer(16)
    probe("kill the judge", lambda: os.kill(judge, 0))
    probe("kill the judge's later thread", lambda: os.kill(thread, 0))
    probe("kill everything", lambda: os.kill(-1, 0))
    probe("tkill the judge's thread", lambda: _syscall("tkill", thread, 0))
    probe("tgkill the judge's thread", lambda: _syscall("tgkill", judge, thread, 0))
    probe("rt_sigqueueinfo the judge's thread", lambda: _syscall("rt_sigqueueinfo", thread, 0, info))
    probe("rt_tgsigqueueinfo the judge's thread", lambda: _syscall("rt_tgsigqueueinfo", judge, thread, 0, info))
    probe("pidfd_open the judge", lambda: _syscall("pidfd_open", judge, 0))
    probe("pidfd_send_signal", lambda: _syscall("pidfd_send_signal", 0, 0, None, 0))
    probe("prlimit64 the judge's thread", lambda: _syscall("prlimit64", thread, resource.RLIMIT_NOFILE, None, old))
    probe("sched_setaffinity the judge's thread", lambda: os.sched_setaffinity(thread, os.sched_getaffinity(thread)))
    probe(
        "sched_setscheduler the judge's thread",
        lambda: os.sched_setscheduler(thread, os.SCHED_OTHER, os.sched_param(0)),
    )
    probe("sched_setparam the judge's thread", lambda: os.sched_setparam(thread, os.sched_param(0)))
    probe("sched_setattr the judge's thread", lambda: _syscall("sched_setattr", thread, attr, 0))
    probe("setpriority the judge's thread", lambda: os.setpriority(os.PRIO_PROCESS, thread, 0))
    probe("setpriority a user", lambda: os.setpriority(os.PRIO_USER, _NOBODY, 19))
    probe("ioprio_set the judge's thread", lambda: _syscall("ioprio_set", 1, thread, 0))  # IOPRIO_WHO_PROCESS
    probe("ioprio_set a user", lambda: _syscall("ioprio_set", 3, _NOBODY, 0))  # IOPRIO_WHO_USER
    probe("migrate_pages the judge's thread", lambda: _syscall("migrate_pages", thread, 0, None, None))
    probe("move_pages the judge's thread", lambda: _syscall("move_pages", thread, 0, None, None, None, 0))
    probe("join the judge's process group", lambda: os.setpgid(0, judge))
    _probe_owners(probe, judge, thread)
    probe("fork a child of the judge", _fork_beside)
    probe("ptrace the judge", lambda: _checked(libc.ptrace(16, judge, 0, 0)))  # PTRACE_ATTACH
    probe("process_vm_readv the judge", lambda: _syscall("process_vm_readv", judge, None, 0, None, 0, 0))


def _probe_owners(probe: _Probes, judge: int, thread: int) -> None:
    """Only named here, never armed: with O_ASYNC and a byte written, the owner would get SIGIO, which ends it."""
    read, _ = os.pipe()
    owner = struct.pack("ii", 0, thread)  # struct f_owner_ex: F_OWNER_TID
    probe("make the judge a pipe's owner (its SIGIO)", lambda: fcntl.fcntl(read, fcntl.F_SETOWN, judge))
    probe("make the judge's thread an owner (F_SETOWN_EX)", lambda: fcntl.fcntl(read, 15, owner))
    with socket.socket(socket.AF_UNIX) as unix:
        probe("make the judge a socket's owner (FIOSETOWN)", lambda: fcntl.ioctl(unix, 0x8901, struct.pack("i", judge)))


def _fork_beside() -> None:
    """clone(CLONE_PARENT): a process whose parent would be the judge (ended at once where it is allowed)."""
    clone = 56 if _COLUMN == 0 else 220
    child = _libc().syscall(clone, 0x8000 | signal.SIGCHLD, 0, 0, 0, 0)
    if child == 0:
        os._exit(0)
    _checked(child)


def _probe_itself(probe: _Probes) -> None:
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    probe("signal itself", lambda: os.kill(os.getpid(), 0))
    probe("signal its group", lambda: os.kill(0, 0))
    probe("signal its group by id", lambda: os.kill(-os.getpid(), 0))
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    probe("signal its own thread", lambda: signal.pthread_kill(worker.ident, 0))
    stop.set()
    worker.join()
    child = os.fork()
    if child == 0:
        os._exit(0)
    probe("signal its child by id", lambda: os.kill(child, 0))  # a zombie until reaped: still signallable unfiltered
    os.waitpid(child, 0)
    probe("re-limit itself", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile))
    probe("re-limit itself by id", lambda: resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE, nofile))
    probe("pin itself", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
    probe("renice itself", lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)))
    probe("a group of its own", lambda: os.setpgid(0, 0))
    read, _ = os.pipe()
    probe("own a pipe (its SIGIO)", lambda: fcntl.fcntl(read, fcntl.F_SETOWN, os.getpid()))


def _probe_the_surface(probe: _Probes, disk_file: int) -> None:
    libc = _libc()
    probe("new user namespace", lambda: linux.unshare(linux.CLONE_NEWUSER))
    probe("mount", lambda: linux.mount("tmpfs", "/tmp", "tmpfs", 0))
    for name in ("bpf", "io_uring_setup", "keyctl", "open_tree_attr"):  # null arguments: EFAULT unfiltered
        probe(name, lambda name=name: _syscall(name, 0, 0, 0, 0, 0))
    one_mib = ctypes.c_long(2**20)
    probe(
        "fallocate, keeping the size",
        lambda: _checked(libc.fallocate(disk_file, _KEEP_SIZE, ctypes.c_long(0), one_mib)),
    )
    reservation = struct.pack("hhqqiI4i", 0, 0, 0, 2**20, 0, 0, 0, 0, 0, 0)  # struct space_resv
    probe("reserve through FS_IOC_RESVSP64", lambda: fcntl.ioctl(disk_file, _RESVSP64, reservation))
    probe("posix_fallocate (written out instead)", lambda: os.posix_fallocate(disk_file, 0, 4096))
    probe("ignore SIGCHLD (children reaped unseen)", lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    no_wait = struct.pack("QQQ", 0, 2, 0)  # struct kernel_sigaction: SIG_DFL with SA_NOCLDWAIT (2)
    probe(
        "catch SIGCHLD with SA_NOCLDWAIT", lambda: _rt_sigaction(signal.SIGCHLD, ctypes.create_string_buffer(no_wait))
    )
    probe("read SIGCHLD's action", lambda: _rt_sigaction(signal.SIGCHLD, None))
    probe("ignore another signal", lambda: signal.signal(signal.SIGUSR1, signal.SIG_IGN))


def _runner(judge: int, thread_ids: int, disk_file: int, answers: int) -> None:
    """The filtered child: its own process group, the filter, then every probe."""
    os.setpgid(0, 0)
    seccomp.install()
    probe = _Probes()
    thread = int(os.read(thread_ids, 32))
    _probe_the_judge(probe, judge, thread)
    _probe_itself(probe)
    _probe_the_surface(probe, disk_file)
    os.write(answers, json.dumps(probe.answers).encode())


def _judge(go: int, thread_ids: int) -> None:
    """The stand-in judge: its own process group; a thread started only after the runner was forked."""
    os.setpgid(0, 0)
    os.read(go, 1)
    done = threading.Event()

    def later_thread() -> None:
        os.write(thread_ids, str(threading.get_native_id()).encode())
        done.wait()

    threading.Thread(target=later_thread).start()
    os.read(go, 1)  # until the test ends
    done.set()


def _forked(others: tuple[int, ...], body, *arguments) -> int:
    """A child running ``body``; it closes ``others`` first (the ends of the pipes that are not its own)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            for fd in others:
                os.close(fd)
            body(*arguments)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


@pytest.fixture(scope="module")
def answers() -> dict[str, str]:
    """The probes' answers in a filtered runner."""
    go_read, go = os.pipe()
    ids_read, ids_write = os.pipe()
    answers_read, answers_write = os.pipe()
    with tempfile.TemporaryFile(dir=tempfile.gettempdir()) as disk_file:
        judge = _forked((go, ids_read, answers_read, answers_write), _judge, go_read, ids_write)
        runner = _forked(
            (go, go_read, ids_write, answers_read), _runner, judge, ids_read, disk_file.fileno(), answers_write
        )
        for fd in (go_read, ids_write, ids_read, answers_write):
            os.close(fd)
        os.write(go, b"1")  # the judge's later thread starts now
        with os.fdopen(answers_read) as pipe:
            text = pipe.read()
        _, status = os.waitpid(runner, 0)
        os.close(go)
        os.waitpid(judge, 0)
        held = os.fstat(disk_file.fileno())
    assert os.waitstatus_to_exitcode(status) == 0, status
    return {**json.loads(text), "disk held by a 4 KiB file": "ok" if held.st_blocks * 512 <= 64 * 1024 else "more"}


def test_the_runner_cannot_signal_limit_or_schedule_its_judge_or_its_later_threads(answers):
    assert {name: answers[name] for name in JUDGE_EXPECTED} == JUDGE_EXPECTED


def test_the_runner_still_signals_limits_and_schedules_itself(answers):
    assert {name: answers[name] for name in OWN_EXPECTED} == OWN_EXPECTED


def test_the_runner_cannot_reach_the_kernels_larger_surfaces_or_hold_disk_beyond_a_files_size(answers):
    assert {name: answers[name] for name in SURFACE_EXPECTED} == SURFACE_EXPECTED


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_fits_classic_bpf(machine):
    code = seccomp.program(1000, machine)
    assert len(code) < 4096
    for index, (op, jt, jf, k) in enumerate(code):
        if op == 0x06:  # return
            continue
        reach = k if op == 0x05 else max(jt, jf)  # an unconditional jump's offset is in k
        assert index + 1 + reach < len(code), f"instruction {index} jumps past the end"
        assert jt < 256 and jf < 256 and 0 <= k < 2**32
    assert code[-1] == (0x06, 0, 0, 0x7FFF0000)  # the last word: allow
