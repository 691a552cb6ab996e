"""Issue 20, forged time: silence the runner's own guard, then make its timer report 0.9 us for every call of
a correct kernel that really spends 20 ms per call. Only the judge's own view of the call can catch this."""
import gc
import time

import torch

_WORK_S = 0.02


def _silence_the_guard():
    for thing in gc.get_objects():
        if type(thing).__name__ == "Guard" and hasattr(thing, "_functions"):
            thing._attributes.clear()
            thing._functions.clear()


def _forge_the_timer():
    for thing in gc.get_objects():
        if type(thing).__name__ in ("CpuTimer", "CudaTimer"):
            honest = type(thing).time_call

            def time_call(self, fn, honest=honest):
                out, timing = honest(self, fn)
                timing.event_us = timing.sync_us = timing.host_us = 0.9
                return out, timing

            type(thing).time_call = time_call


_silence_the_guard()
_forge_the_timer()


def custom_kernel(data):
    a, b, out = data
    until = time.perf_counter() + _WORK_S
    while time.perf_counter() < until:          # the work the forged time hides
        pass
    return torch.add(a, b, out=out)
