"""The few Linux calls the sandbox needs that Python's ``os`` module lacks, through ctypes.

Each raises ``OSError`` with the call's errno, so callers can tell "not allowed here" (EPERM, ENOSYS,
EINVAL) from a bug. Nothing here decides policy; ``harness.isolation.sandbox`` and ``harness.isolation.rootfs`` do.
"""

from __future__ import annotations

import ctypes
import os
import platform
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MNT_DETACH = 0x2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

# System call numbers glibc may not wrap (pivot_root never, mount_setattr only from 2.36).
_SYSCALLS = {
    "x86_64": {"pivot_root": 155, "capset": 126, "mount_setattr": 442},
    "aarch64": {"pivot_root": 41, "capset": 91, "mount_setattr": 442},
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
_libc.unshare.argtypes = (ctypes.c_int,)
_libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
for _vm_call in (_libc.process_vm_readv, _libc.process_vm_writev):
    _vm_call.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong)
    _vm_call.restype = ctypes.c_ssize_t


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def _syscall_number(name: str) -> int:
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise OSError(38, f"{name}: no system call number known for {platform.machine()}")  # ENOSYS
    return numbers[name]


def _path(path: str | None) -> bytes | None:
    return None if path is None else os.fsencode(path)


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_path(source), _path(target), _path(fstype), flags, _path(data)), f"mount {target}")


def umount_detached(target: str) -> None:
    _check(_libc.umount2(_path(target), MNT_DETACH), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    number = _syscall_number("pivot_root")
    _check(_libc.syscall(number, _path(new_root), _path(put_old)), "pivot_root")


def make_tree_read_only(target: str) -> None:
    """Make the mount at ``target`` and every mount below it read-only in one call (Linux 5.12+)."""
    attr = _MountAttr(attr_set=_MOUNT_ATTR_RDONLY)
    number = _syscall_number("mount_setattr")
    _check(
        _libc.syscall(
            number, _AT_FDCWD, _path(target), _AT_RECURSIVE, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))
        ),
        f"mount_setattr {target}",
    )


def prctl(option: int, value: int = 0) -> None:
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl {option}")


def drop_capabilities() -> None:
    """Empty the bounding set and the effective, permitted and inheritable sets of this process."""
    cap = 0
    while True:  # the kernel's last capability number varies; EINVAL marks the end
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError as exc:
            if exc.errno == 22:
                break
            raise
        cap += 1
    header = _CapHeader(version=_LINUX_CAPABILITY_VERSION_3, pid=0)
    data = (_CapData * 2)()
    _check(_libc.syscall(_syscall_number("capset"), ctypes.byref(header), ctypes.byref(data)), "capset")


def read_process_memory(pid: int, remote: int, local: int, nbytes: int) -> None:
    """Copy ``nbytes`` of ``pid``'s memory at ``remote`` to this process's ``local`` (process_vm_readv): the kernel
    copies, and the other process runs no code for it."""
    _move_process_memory(_libc.process_vm_readv, pid, remote, local, nbytes, "process_vm_readv")


def write_process_memory(pid: int, remote: int, local: int, nbytes: int) -> None:
    """Copy ``nbytes`` of this process's memory at ``local`` into ``pid``'s at ``remote`` (process_vm_writev)."""
    _move_process_memory(_libc.process_vm_writev, pid, remote, local, nbytes, "process_vm_writev")


def _move_process_memory(call: Any, pid: int, remote: int, local: int, nbytes: int, what: str) -> None:
    """One iovec each side, repeated from where a partial transfer stopped."""
    done = 0
    while done < nbytes:
        ours, theirs = _IoVec(local + done, nbytes - done), _IoVec(remote + done, nbytes - done)
        moved = _check(call(pid, ctypes.byref(ours), 1, ctypes.byref(theirs), 1, 0), what)
        if moved == 0:
            raise OSError(14, f"{what}: nothing moved at {remote + done:#x}")  # EFAULT
        done += moved
