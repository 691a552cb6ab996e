"""The runner's seccomp filter (harness.isolation.seccomp), installed in a forked child of the test."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import signal

import pytest

from harness.isolation import linux, seccomp

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="no filter for this arch")


def _in_filtered_child(judge: int) -> tuple[int, dict[str, str]]:
    """The process id of a child with the filter installed, and what each probe answers in it."""
    parent = os.getpid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.setpgid(0, 0)
        seccomp.install()
        libc = ctypes.CDLL(None, use_errno=True)
        answers = {}

        def probe(name, action):
            try:
                action()
                answers[name] = "ok"
            except OSError as exc:
                answers[name] = errno.errorcode.get(exc.errno, str(exc.errno))

        def ptrace():
            if libc.ptrace(16, parent, 0, 0) != 0:  # PTRACE_ATTACH
                raise OSError(ctypes.get_errno(), "ptrace")

        probe("signal the judge", lambda: os.kill(judge, 0))
        probe("signal everything", lambda: os.kill(-1, 0))
        probe("signal itself", lambda: os.kill(os.getpid(), 0))
        probe("signal its group", lambda: os.kill(0, 0))
        probe("ptrace the parent", ptrace)
        probe("new user namespace", lambda: linux.unshare(linux.CLONE_NEWUSER))
        probe("mount", lambda: linux.mount("tmpfs", "/tmp", "tmpfs", 0))
        column = 0 if platform.machine() == "x86_64" else 1
        for name in ("bpf", "io_uring_setup", "keyctl", "open_tree_attr"):  # null arguments: EFAULT unfiltered
            number = seccomp.DENIED[name][column]
            probe(name, lambda number=number: _checked(libc.syscall(number, 0, 0, 0, 0, 0)))
        child = os.fork()
        if child == 0:
            os._exit(0)
        probe("signal its child", lambda: os.kill(child, signal.SIGKILL))
        os.waitpid(child, 0)
        os.write(write, json.dumps(answers).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    return pid, json.loads(text)


def _judge_stand_in() -> tuple[int, int]:
    """A process forked just before the runner, as the judge is (its id, and the pipe that ends it)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write)
        os.read(read, 1)
        os._exit(0)
    os.close(read)
    return pid, write


def _checked(returned: int) -> None:
    if returned != 0:
        raise OSError(ctypes.get_errno(), "syscall")


def _probed_after_a_judge() -> dict[str, str]:
    """The probes' answers in a runner whose id is above its judge's, as in the sandbox's fresh pid namespace.
    The host's ids wrap around (this process may be older than the wrap), so the judge is forked just before;
    the rare wrap between the two forks is retried."""
    while True:
        judge, ender = _judge_stand_in()
        try:
            runner, answers = _in_filtered_child(judge)
        finally:
            os.close(ender)
            os.waitpid(judge, 0)
        if runner > judge:
            return answers


def test_the_runner_cannot_reach_its_judge_or_the_kernels_larger_surfaces():
    answers = _probed_after_a_judge()
    assert answers == {
        "signal the judge": "EPERM",
        "signal everything": "EPERM",
        "signal itself": "ok",
        "signal its group": "ok",
        "ptrace the parent": "EPERM",
        "new user namespace": "EPERM",
        "mount": "EPERM",
        "bpf": "EPERM",
        "io_uring_setup": "EPERM",
        "keyctl": "EPERM",
        "open_tree_attr": "EPERM",
        "signal its child": "ok",
    }


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_fits_classic_bpf(machine):
    code = seccomp.program(1000, machine)
    assert len(code) < 4096
    for index, (op, jt, jf, k) in enumerate(code):
        if op == 0x06:  # return
            continue
        reach = k if op == 0x05 else max(jt, jf)  # an unconditional jump's offset is in k
        assert index + 1 + reach < len(code), f"instruction {index} jumps past the end"
    assert code[-1] == (0x06, 0, 0, 0x7FFF0000)  # the last word: allow
