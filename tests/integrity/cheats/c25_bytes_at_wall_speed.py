"""Issue 25, time bought with bytes, once more: the allowance for the bytes a call moves was their time through the
judge's own socket in wall time, measured once; on a loaded machine (the judge's threads waiting for a core) it read
4-9 times what moving them really costs the runner in CPU time, which is what a call's spending is counted in.

On vectoradd's largest CPU shape (768 x 768 fp16, 5.9 MB moved per call) this kernel does about 6 ms of needless
work per call and its timer reports 5 us; the smaller shapes are honest. Against the wall-time allowance it passed
the timing in 3 of 4 runs on the 2-core development machine (the other engineers' tests as the load), with 1.1 to
7 ms per call to spare. The defence: the judge measures a byte's cost the way it counts a call's, in the job's CPU
time, from calls of a 4 MiB input made before the submission is imported."""

import gc


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
    a, b = data
    total = 0
    for step in range(250_000 if a.numel() > 500_000 else 0):  # the work the bytes' allowance was to hide
        total += step
    return a + b
