"""The runner's seccomp filter: kernel interfaces no kernel submission needs, refused before it is imported.

A classic-BPF program, assembled here (no libseccomp needed) and installed on every thread of the runner
with ``seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC)``; the judge keeps its full surface.
It kills the process on any other system-call ABI than the native one (i386 calls through ``int 0x80``
on x86_64, x32 numbers), answers ``EPERM`` to the calls in ``DENIED`` and to ``clone`` with a namespace
flag, and ``ENOSYS`` to ``clone3`` (whose flags BPF cannot read), so libc falls back to ``clone``.

Refused, and why none is needed to compute a kernel's output:

* ``ptrace``, ``process_vm_readv``/``writev``: reading or steering another process (the judge);
* ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``, ``keyctl``/``add_key``/``request_key``:
  large kernel surfaces with a record of privilege escalations; CUDA, Triton and torch use none of them;
* ``unshare``, ``setns``, ``clone`` with ``CLONE_NEW*``: new namespaces (a user namespace would give back
  the capabilities the sandbox dropped);
* ``mount``, ``umount2``, ``pivot_root``, the new mount API, ``open_by_handle_at``: the filesystem view;
* module loading and ``kexec``: never for a job.
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
# signals and pidfds: the first argument is a process (group) id the runner may only name if it is its own or
# a descendant's (their ids are higher: the judge forked the runner, the runner forks the rest)
SIGNALLING = {
    "kill": (62, 129),
    "tkill": (200, 130),
    "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138),
    "rt_tgsigqueueinfo": (297, 240),
    "pidfd_open": (434, 434),
}
DENIED_TOO = {"pidfd_send_signal": (424, 424)}  # also takes /proc/<pid> descriptors: no way to tell whose
# column, audit arch, clone, clone3, seccomp
_ARCHES = {"x86_64": (0, 0xC000003E, 56, 435, 317), "aarch64": (1, 0xC00000B7, 220, 435, 277)}

_LD_W_ABS, _JA, _JEQ, _JGT, _JGE, _JSET, _RET = 0x20, 0x05, 0x15, 0x25, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args little-endian, low word)
_SET_MODE_FILTER, _FLAG_TSYNC = 1, 1


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def program(lowest_pid: int, machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter for ``machine`` (default this one) as (code, jt, jf, k) instructions; processes below
    ``lowest_pid`` (the judge, the sandbox's init) cannot be signalled."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {machine}")
    if not 1 < lowest_pid < 2**22:
        raise ValueError(f"lowest_pid must be a process id above 1, not {lowest_pid}")
    column, audit, clone, clone3, _ = _ARCHES[machine]
    numbers = sorted({numbers[column] for numbers in {**DENIED, **DENIED_TOO}.values()})
    deny, nosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    code = [(_LD_W_ABS, 0, 0, _ARCH), (_JEQ, 1, 0, audit), (_RET, 0, 0, _KILL_PROCESS), (_LD_W_ABS, 0, 0, _NR)]
    if machine == "x86_64":
        code += [(_JGE, 0, 1, _X32_BIT), (_RET, 0, 0, _KILL_PROCESS)]
    for number in numbers:
        code += [(_JEQ, 0, 1, number), (_RET, 0, 0, deny)]
    signalling = sorted({numbers[column] for numbers in SIGNALLING.values()})
    for index, number in enumerate(signalling):  # each jumps to the pid check after the last of them
        code.append((_JEQ, len(signalling) - index, 0, number))
    code += [
        (_JA, 0, 0, 7),  # none of them: on to clone
        # the pid check, on the low 32 bits (pid_t): 0 (own group), own or higher, or minus one of those
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ, 4, 0, 0),
        (_JGE, 0, 1, 0x80000000),
        (_JGT, 1, 2, 2**32 - lowest_pid),
        (_JGE, 1, 0, lowest_pid),
        (_RET, 0, 0, deny),
        (_RET, 0, 0, _ALLOW),
    ]
    code += [
        (_JEQ, 0, 1, clone3),
        (_RET, 0, 0, nosys),
        (_JEQ, 0, 3, clone),
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JSET, 0, 1, _NAMESPACE_FLAGS),
        (_RET, 0, 0, deny),
        (_RET, 0, 0, _ALLOW),
    ]
    return code


def install() -> None:
    """Install the filter on every thread of this process (the lowest process it may signal: itself); raises
    OSError where the kernel refuses."""
    code = program(os.getpid())
    instructions = (_Filter * len(code))(*(_Filter(*instruction) for instruction in code))
    prog = _Program(len(code), instructions)
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)  # required to filter without CAP_SYS_ADMIN
    number = _ARCHES[platform.machine()][4]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, _SET_MODE_FILTER, _FLAG_TSYNC, ctypes.byref(prog)) != 0:
        failure = ctypes.get_errno()
        raise OSError(failure, f"seccomp: {os.strerror(failure)}")
