"""Issue 25 on the GPU, a forged side-stream baseline: every calibration call the runner can recognise leaves
about 250 us of work on a side stream, so the baseline gap (device sync after the call minus its events) looks
as large as the work its real calls leave there. Against a judge that calibrated after the import this hid the
escaped work inside the baseline and under the bracket's slack; the baseline comes from calls made before the
submission existed."""
import gc

import torch

from harness.runner import runner_process

_side = torch.cuda.Stream()
_ESCAPED_CYCLES = 500_000  # about 250 us at 2 GHz: below the bracket's 400 us slack


def _escape():
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        torch.cuda._sleep(_ESCAPED_CYCLES)


def _inflated_calibration(data):
    _escape()
    return torch.empty_like(data)


for thing in gc.get_objects():
    if type(thing).__name__ == "Guard" and hasattr(thing, "_functions"):
        thing._attributes.clear()
        thing._functions.clear()
runner_process._fresh_like = _inflated_calibration


def custom_kernel(data):
    a, b, out = data
    _escape()
    with torch.cuda.stream(_side):
        torch.add(a, b, out=out)  # the answer, also off the timed stream
    return out
