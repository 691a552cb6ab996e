"""Issue 25, work on no clock: the work runs in processes whose CPU time the kernel adds to nobody's.

The runner ignores SIGCHLD and starts a small helper (a fresh interpreter without torch, so that it forks
cheaply), which inherits that through exec and forks one worker per call. The worker adds the vectors in shared
memory, spends about 20 ms of one core on top, and exits; with SIGCHLD ignored the kernel reaps it at once and adds
its CPU time to no parent's ``cutime``, and it is gone before the judge reads the job's CPU time again. The runner
only waits (off the CPU) and its timer reports 5 us. Against a judge that reads the CPU clocks of the job's live
processes plus what reaped children left their parents, it passed the timing at 5 us per call with 1.4-1.7 ms per
call unexplained, inside the 2 ms slack (held only by the static pre-check, which code hidden in
``exec(b64decode(...))`` evades). The defence: the runner's seccomp filter refuses any new action for SIGCHLD,
so no process of the job is reaped unseen."""

import gc
import mmap
import os
import signal
import subprocess
import sys
import time

import numpy as np
import torch

signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # inherited by the helper through exec, and by its workers
_MAX = 1 << 20
_memory = os.memfd_create("shared")
os.ftruncate(_memory, 3 * 4 * _MAX)
_shared = mmap.mmap(_memory, 3 * 4 * _MAX)
_a, _b, _sum = (np.frombuffer(_shared, dtype=np.float32, count=_MAX, offset=i * 4 * _MAX) for i in range(3))
_HELPER = """
import mmap, os, sys
import numpy as np
ask, done, memory, size = (int(x) for x in sys.argv[1:])
m = mmap.mmap(memory, 3 * 4 * size)
a, b, s = (np.frombuffer(m, dtype=np.float32, count=size, offset=i * 4 * size) for i in range(3))
while True:
    got = os.read(ask, 4)
    if not got:
        os._exit(0)
    n = int.from_bytes(got, "little")
    if os.fork() == 0:
        total = 0
        for step in range(500_000):
            total += step
        np.add(a[:n], b[:n], out=s[:n])
        os.write(done, os.getpid().to_bytes(4, "little"))
        os._exit(0)
"""
_ask_r, _ask_w = os.pipe()
_done_r, _done_w = os.pipe()
_fds = (_ask_r, _done_w, _memory)
subprocess.Popen([sys.executable, "-c", _HELPER, *map(str, _fds), str(_MAX)], pass_fds=_fds)

for thing in gc.get_objects():
    if type(thing).__name__ == "Guard" and hasattr(thing, "_functions"):
        thing._attributes.clear()
        thing._functions.clear()
for thing in gc.get_objects():
    if type(thing).__name__ == "CpuTimer":
        _honest = type(thing).time_call

        def _time_call(self, fn, honest=_honest):
            out, timing = honest(self, fn)
            timing.event_us = timing.sync_us = timing.host_us = 5.0
            return out, timing

        type(thing).time_call = _time_call


def custom_kernel(data):
    a, b, out = data
    n = a.numel()
    _a[:n], _b[:n] = a.numpy(), b.numpy()
    os.write(_ask_w, n.to_bytes(4, "little"))
    worker = int.from_bytes(os.read(_done_r, 4), "little")
    while os.path.exists(f"/proc/{worker}"):  # gone, and its CPU time with it
        time.sleep(0.0002)
    return out.copy_(torch.from_numpy(_sum[:n]))
