"""Issue 25, work in clock ticks: processes reaped during a call leave their CPU time to their parent in whole
clock ticks (``cutime``/``cstime``, 10 ms), while the judge took the median over a shape's calls.

A small helper started at import (a fresh interpreter without torch, so that it forks cheaply) forks one worker per
call and waits for it; the worker adds the vectors in shared memory and spends 3 ms of CPU on top. Reaped, its time
reaches the helper's ``cutime``, so a call shows either nothing or a whole tick: about 60 % of the calls show
nothing, and so does their median. The runner only waits and its timer reports 5 us. Against the per-call median it
passed the timing with 0.5 ms per call unexplained (held only by the static pre-check). The defence: each call counts
the shape's mean of the reaped ticks instead of its own."""

import gc
import mmap
import os
import subprocess
import sys

import numpy as np
import torch

_MAX = 1 << 20
_memory = os.memfd_create("shared")
os.ftruncate(_memory, 3 * 4 * _MAX)
_shared = mmap.mmap(_memory, 3 * 4 * _MAX)
_a, _b, _sum = (np.frombuffer(_shared, dtype=np.float32, count=_MAX, offset=i * 4 * _MAX) for i in range(3))
_HELPER = """
import mmap, os, sys, time
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
        until = time.thread_time() + 0.003
        while time.thread_time() < until:  # 3 ms of CPU, however fast the machine
            pass
        np.add(a[:n], b[:n], out=s[:n])
        os._exit(0)
    worker, _ = os.waitpid(-1, 0)  # its CPU time goes to this process's cutime, in ticks
    os.write(done, worker.to_bytes(4, "little"))
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
    os.read(_done_r, 4)  # reaped by the helper by now
    return out.copy_(torch.from_numpy(_sum[:n]))
