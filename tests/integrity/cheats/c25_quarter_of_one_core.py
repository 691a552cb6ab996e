"""Issue 25, one core of many: a single-threaded 20 ms call whose timer reports a quarter of its time. A judge that
spread the job's CPU time over all the cores the job may use, with a 200 % slack, let it pass (on 16 cores about
1/48 of the time would have); the CPU time counts over the cores the call really kept busy. (A quarter of the
thread's own CPU time, so that a loaded machine does not make the lie look like waiting for a core.)"""
import gc
import time

import torch

_WORK = 500_000  # steps of Python work: about 20 ms of one core, however loaded the machine is

for thing in gc.get_objects():
    if type(thing).__name__ == "Guard" and hasattr(thing, "_functions"):
        thing._attributes.clear()
        thing._functions.clear()
for thing in gc.get_objects():
    if type(thing).__name__ == "CpuTimer":
        _honest = type(thing).time_call

        def _time_call(self, fn):
            used = time.thread_time_ns()
            out, timing = _honest(self, fn)
            timing.event_us = timing.sync_us = timing.host_us = (time.thread_time_ns() - used) / 1000 / 4
            return out, timing

        type(thing).time_call = _time_call


def custom_kernel(data):
    a, b, out = data
    total = 0
    for step in range(_WORK):  # one thread, one core
        total += step
    return torch.add(a, b, out=out)
