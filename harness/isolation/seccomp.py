"""The runner's seccomp filter: kernel interfaces no kernel submission needs, refused before it is imported.

A classic-BPF program, assembled here (no libseccomp needed) and installed on every thread of the runner
with ``seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC)``; the judge keeps its full surface.
It kills the process on any other system-call ABI than the native one (i386 calls through ``int 0x80``
on x86_64, x32 numbers), answers ``EPERM`` to the calls in ``DENIED`` and to ``clone`` with a namespace
flag or ``CLONE_PARENT``, and ``ENOSYS`` to ``clone3`` (whose flags BPF cannot read), so libc falls back to ``clone``.

Refused, and why none is needed to compute a kernel's output:

* ``ptrace``, ``process_vm_readv``/``writev``, the pidfd calls that reach into a process: reading or steering
  another process (the judge);
* signalling, re-limiting or re-scheduling any process but the runner itself (``ON_ITSELF``, and the owner of a
  file description, who gets its SIGIO): the runner cannot stop, slow down or starve its judge;
* ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``, ``keyctl``/``add_key``/``request_key``:
  large kernel surfaces with a record of privilege escalations; CUDA, Triton and torch use none of them;
* ``unshare``, ``setns``, ``clone`` with ``CLONE_NEW*``: new namespaces (a user namespace would give back
  the capabilities the sandbox dropped);
* ``mount``, ``umount2``, ``pivot_root``, the new mount API, ``open_by_handle_at``: the filesystem view;
* ``fallocate`` and its ioctls (``EOPNOTSUPP``): disk held beyond a file's size, which no size limit sees;
* module loading and ``kexec``: never for a job;
* any new action for ``SIGCHLD`` (``rt_sigaction``): ignoring it, or ``SA_NOCLDWAIT``, makes the kernel reap a
  child at once without adding its CPU time to its parent's, and a process of the job that is gone is then on no
  clock the judge can read (``harness.judge.judge_clock``); BPF cannot read the action, so none is allowed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

from harness.isolation import linux

_NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_X32_BIT = 0x40000000

# name: (x86_64 number, aarch64 number)
DENIED = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_by_handle_at": (304, 265),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "open_tree_attr": (467, 467),  # Linux 6.15
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
}
DENIED_TOO = {  # processes named by a pidfd, which BPF cannot look into
    "pidfd_send_signal": (424, 424),
    "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
    "process_mrelease": (448, 448),
    "kcmp": (312, 272),
}
# Calls that name a process, thread, group or user, each allowed only where every listed argument names the runner
# itself: its pid (``PID``), 0 for "the caller" (its own thread, process or group), its own process group (``GROUP``,
# -pid; it made itself a group leader before the filter), or one of the listed plain values. Anything else, a thread
# of the judge included, is refused. BPF compares arguments with constants only, so "a descendant" or "one of my
# threads" cannot be said; and kill() with any thread's id signals that thread's whole process, so no pid order is safe.
PID, GROUP = "pid", "-pid"
ON_ITSELF = {
    "kill": ((62, 129), ((0, (0, PID, GROUP)),)),
    "tkill": ((200, 130), ((0, (PID,)),)),
    # the kernel delivers these only to a thread of the named thread group
    "tgkill": ((234, 131), ((0, (PID,)),)),
    "rt_sigqueueinfo": ((129, 138), ((0, (PID,)),)),
    "rt_tgsigqueueinfo": ((297, 240), ((0, (PID,)),)),
    "pidfd_open": ((434, 434), ((0, (PID,)),)),
    "prlimit64": ((302, 261), ((0, (0, PID)),)),
    "sched_setaffinity": ((203, 122), ((0, (0, PID)),)),
    "sched_setscheduler": ((144, 119), ((0, (0, PID)),)),
    "sched_setparam": ((142, 118), ((0, (0, PID)),)),
    "sched_setattr": ((314, 274), ((0, (0, PID)),)),
    "migrate_pages": ((256, 238), ((0, (0, PID)),)),
    "move_pages": ((279, 239), ((0, (0, PID)),)),
    "setpriority": ((141, 140), ((0, (0, 1)), (1, (0, PID)))),  # PRIO_PROCESS or PRIO_PGRP, never PRIO_USER
    "ioprio_set": ((251, 30), ((0, (1, 2)), (1, (0, PID)))),  # IOPRIO_WHO_PROCESS or _PGRP, never _USER
    "setpgid": ((109, 154), ((1, (0, PID)),)),  # a group of its own or the runner's, never the judge's
}
# The owner of a file description gets SIGIO (whose default ends a process) or F_SETSIG's signal when I/O is ready
# on it: naming another process as owner is signalling it. fcntl F_SETOWN may name only the runner; F_SETOWN_EX
# and the FIOSETOWN and SIOCSPGRP ioctls take a pointer BPF cannot read, and are refused.
FCNTL = (72, 25)
F_SETOWN, F_SETOWN_EX = 8, 15
OWNER_IOCTLS = (0x8901, 0x8902)
# Space a file holds beyond its size (the size is what RLIMIT_FSIZE and the flood check see): fallocate, and the
# ioctls that call it (FS_IOC_RESVSP, FS_IOC_RESVSP64, FS_IOC_ZERO_RANGE). EOPNOTSUPP, as on a filesystem without
# it: posix_fallocate then writes the bytes instead, which the size limits count.
FALLOCATE = (285, 47)
IOCTL = (16, 29)
# rt_sigaction(SIGCHLD, act): refused whenever act is not NULL (both words of the pointer are looked at)
RT_SIGACTION = (13, 134)
SIGCHLD = 17
RESERVING_IOCTLS = (0x40305828, 0x4030582A, 0x40305839)
# column, audit arch, clone, clone3, seccomp
_ARCHES = {"x86_64": (0, 0xC000003E, 56, 435, 317), "aarch64": (1, 0xC00000B7, 220, 435, 277)}
_CLONE_PARENT = 0x00008000  # the new process would be the judge's child

_LD_W_ABS, _JA, _JEQ, _JGE, _JSET, _RET = 0x20, 0x05, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data; argument i's low word (what an int argument is) at 16 + 8 i
_SET_MODE_FILTER, _FLAG_TSYNC = 1, 1

Instruction = tuple[int, int, int, int]


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def program(pid: int, machine: str | None = None) -> list[Instruction]:
    """The filter for ``machine`` (default this one) of the runner whose process id is ``pid``, as (code, jt, jf, k)
    instructions."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {machine}")
    if not 1 < pid < 2**22:
        raise ValueError(f"pid must be a process id above 1, not {pid}")
    column, audit, clone, clone3, _ = _ARCHES[machine]
    deny, nosys, unsupported = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS, _ERRNO | errno.EOPNOTSUPP
    code = [(_LD_W_ABS, 0, 0, _ARCH), (_JEQ, 1, 0, audit), (_RET, 0, 0, _KILL_PROCESS), (_LD_W_ABS, 0, 0, _NR)]
    if machine == "x86_64":
        code += [(_JGE, 0, 1, 0x40000000), (_RET, 0, 0, _KILL_PROCESS)]  # the x32 ABI's numbers
    refused_ioctls = {**dict.fromkeys(RESERVING_IOCTLS, unsupported), **dict.fromkeys(OWNER_IOCTLS, deny)}
    code += _by_value(IOCTL[column], 1, {cmd: [(_RET, 0, 0, result)] for cmd, result in refused_ioctls.items()})
    owner = _all_of(((2, (0, pid, _value(GROUP, pid))),), _ALLOW, deny)
    code += _by_value(FCNTL[column], 1, {F_SETOWN: owner, F_SETOWN_EX: [(_RET, 0, 0, deny)]})
    code += _reaping(RT_SIGACTION[column], deny)
    for numbers, arguments in ON_ITSELF.values():
        named = tuple((index, tuple(_value(value, pid) for value in values)) for index, values in arguments)
        code += _when(numbers[column], named, _ALLOW, deny)
    for number in sorted({numbers[column] for numbers in {**DENIED, **DENIED_TOO}.values()}):
        code += [(_JEQ, 0, 1, number), (_RET, 0, 0, deny)]
    code += [(_JEQ, 0, 1, FALLOCATE[column]), (_RET, 0, 0, unsupported)]
    code += [(_JEQ, 0, 1, clone3), (_RET, 0, 0, nosys)]  # libc falls back to clone, whose flags BPF can read
    code += [
        (_JEQ, 0, 3, clone),
        (_LD_W_ABS, 0, 0, _argument(0)),
        (_JSET, 0, 1, _NAMESPACE_FLAGS | _CLONE_PARENT),
        (_RET, 0, 0, deny),
        (_RET, 0, 0, _ALLOW),
    ]
    return code


def _when(
    number: int, arguments: tuple[tuple[int, tuple[int, ...]], ...], matched: int, otherwise: int
) -> list[Instruction]:
    """A block for one system call, skipped by every other: ``matched`` when each listed argument holds one of its
    values, else ``otherwise``. Every block ends in returns, so the next one still finds the call's number."""
    checks = _all_of(arguments, matched, otherwise)
    return [(_JEQ, 0, len(checks), number), *checks]


def _reaping(number: int, deny: int) -> list[Instruction]:
    """rt_sigaction: ``deny`` for a new action on SIGCHLD (a non-NULL second argument), else allow."""
    body = [
        (_LD_W_ABS, 0, 0, _argument(0)),
        (_JEQ, 0, 5, SIGCHLD),  # another signal: allow
        (_LD_W_ABS, 0, 0, _argument(1)),
        (_JEQ, 0, 2, 0),  # the pointer's low word: not NULL, deny
        (_LD_W_ABS, 0, 0, _argument(1) + 4),
        (_JEQ, 1, 0, 0),  # its high word: NULL altogether, allow
        (_RET, 0, 0, deny),
        (_RET, 0, 0, _ALLOW),
    ]
    return [(_JEQ, 0, len(body), number), *body]


def _by_value(number: int, index: int, cases: dict[int, list[Instruction]]) -> list[Instruction]:
    """A block for one system call that looks at one argument: the instructions of the case its value names (each
    ends in a return), and for any other value, allow. The GPU driver's hot calls (ioctl) are the first blocks."""
    body = [(_LD_W_ABS, 0, 0, _argument(index))]
    for value, case in cases.items():
        body += [(_JEQ, 0, len(case), value), *case]
    body.append((_RET, 0, 0, _ALLOW))
    return [(_JEQ, 0, len(body), number), *body]


def _all_of(arguments: tuple[tuple[int, tuple[int, ...]], ...], matched: int, otherwise: int) -> list[Instruction]:
    """``matched`` when each listed argument holds one of its values, else ``otherwise``."""
    checks: list[Instruction | None] = []
    for index, values in arguments:
        checks.append((_LD_W_ABS, 0, 0, _argument(index)))
        checks += [(_JEQ, len(values) - position, 0, value) for position, value in enumerate(values)]  # on: next
        checks.append(None)  # none of them: a jump to ``otherwise``
    matched_at = len(checks)  # ``otherwise`` right after
    body = [(_JA, 0, 0, matched_at - at) if check is None else check for at, check in enumerate(checks)]
    return [*body, (_RET, 0, 0, matched), (_RET, 0, 0, otherwise)]


def _argument(index: int) -> int:
    return 16 + 8 * index


def _value(value: int | str, pid: int) -> int:
    """A value as the low 32 bits of its argument (pid_t and int are 32 bits, negative ones in two's complement)."""
    if value == PID:
        return pid
    return 2**32 - pid if value == GROUP else int(value)


def install() -> None:
    """Install the filter on every thread of this process, the runner, once it leads a process group of its own;
    raises OSError where the kernel refuses."""
    code = program(os.getpid())
    instructions = (_Filter * len(code))(*(_Filter(*instruction) for instruction in code))
    prog = _Program(len(code), instructions)
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)  # required to filter without CAP_SYS_ADMIN
    number = _ARCHES[platform.machine()][4]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, _SET_MODE_FILTER, _FLAG_TSYNC, ctypes.byref(prog)) != 0:
        failure = ctypes.get_errno()
        raise OSError(failure, f"seccomp: {os.strerror(failure)}")
