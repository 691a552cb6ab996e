"""Reserves disk through its captured stdout beyond the file's size (fallocate with FALLOC_FL_KEEP_SIZE, and the
FS_IOC_RESVSP64 ioctl that does the same), then answers correctly: the size stays 0, so size limits see nothing."""

import ctypes
import errno
import fcntl
import os
import struct

import torch

_GIB = 2**30
_libc = ctypes.CDLL(None, use_errno=True)


def _fallocate(fd):
    if _libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(_GIB)) != 0:  # FALLOC_FL_KEEP_SIZE
        raise OSError(ctypes.get_errno(), "fallocate")


def _resvsp64(fd):
    fcntl.ioctl(fd, 0x4030582A, struct.pack("hhqqiI4i", 0, 0, 0, _GIB, 0, 0, 0, 0, 0, 0))


attempts = {}
for name, opened, reserve in (
    ("fallocate stdout", lambda: 1, _fallocate),
    ("fallocate stderr", lambda: 2, _fallocate),
    ("fallocate stdout reopened", lambda: os.open("/proc/self/fd/1", os.O_WRONLY), _fallocate),
    ("FS_IOC_RESVSP64 stdout", lambda: 1, _resvsp64),
):
    try:
        fd = opened()
        reserve(fd)
        attempts[name] = f"held {os.fstat(fd).st_blocks * 512} bytes"
    except OSError as exc:
        attempts[name] = errno.errorcode.get(exc.errno, str(exc.errno))
print("reservations:", attempts, flush=True)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
