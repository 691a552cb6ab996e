"""C22: try to take over the harness: kill or trace its processes, write their memory, then return zeros."""
import ctypes
import os
import signal

import torch

_libc = ctypes.CDLL(None, use_errno=True)
attempts = {}
for pid in (os.getppid(), 1):
    for name, action in (("kill", lambda p: os.kill(p, signal.SIGKILL)),
                         ("ptrace", lambda p: _libc.ptrace(16, p, 0, 0)),         # PTRACE_ATTACH
                         ("mem", lambda p: open(f"/proc/{p}/mem", "wb").close())):
        try:
            attempts[f"{name} {pid}"] = action(pid)
        except OSError as exc:
            attempts[f"{name} {pid}"] = exc.errno
print(attempts, flush=True)


def custom_kernel(data):
    a, b, out = data
    return torch.zeros_like(out)
