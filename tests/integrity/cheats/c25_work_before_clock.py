"""Issue 25, work before the clock starts: the runner does the slow work as soon as a call's inputs reach its
process, before its own timer starts, and the timed call only hands back the cached answer.

It wraps its link's ``receive`` (an attribute of one object, which no guard watches): every request that brings
inputs is unpacked there with the harness's own functions, the kernel runs on them (about 20 ms of work), and the
answer waits in a cache for the call. Against a judge whose clock starts after the runner says the inputs are
staged, this ranked a 20 ms kernel at a few microseconds; the judge's clock must already run when the inputs
arrive."""
import gc

import torch

from harness import transport
from harness.runner import runner_process

_WORK = 500_000  # steps of Python work: about 20 ms of one core, however loaded the machine is
_cache = {}


def _slow_add(a, b):
    total = 0
    for step in range(_WORK):  # the work that should have been timed
        total += step
    if a.is_cuda:
        torch.cuda._sleep(50_000_000)  # about 25 ms on the device too
    return a + b


def _key(a):
    return (a.numel(), tuple(a[:4].tolist()))


def _precompute(runner, record, blobs):
    if record.get("op") not in ("stage", "call") or record.get("calibration"):
        return
    storages = runner_process._storages(record.get("storages") or [], blobs, runner.staged)
    a, b, _ = transport.unpack(record.get("value"), storages)
    _cache[_key(a)] = _slow_add(a, b)
    if a.is_cuda:
        torch.cuda.synchronize()


def _hook():
    for runner in gc.get_objects():
        if type(runner).__name__ == "Runner" and hasattr(runner, "link") and hasattr(runner, "staged"):
            honest = runner.link.receive

            def receive(*args, honest=honest, runner=runner, **kwargs):
                record, blobs = honest(*args, **kwargs)
                _precompute(runner, record, blobs)
                return record, blobs

            runner.link.receive = receive


_hook()


def custom_kernel(data):
    a, b, out = data
    cached = _cache.pop(_key(a), None)
    return out.copy_(cached) if cached is not None else out.copy_(_slow_add(a, b))
