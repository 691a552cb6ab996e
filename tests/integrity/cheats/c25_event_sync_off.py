"""Issue 25 on the GPU, the runner asks the judge not to wait: its answer's CUDA IPC descriptions say
``event_sync: false``, its timer reports 5 us without waiting for anything, and the call returns with 2 ms of
work still queued on its stream. A judge that let the runner decide would copy the output (and stop its clock)
before the work was done; the judge always waits on the runner's stream."""
import gc

import torch

from harness.timing import CallTiming


def _silence_and_forge():
    for thing in gc.get_objects():
        if type(thing).__name__ == "Guard" and hasattr(thing, "_functions"):
            thing._attributes.clear()
            thing._functions.clear()
    for thing in gc.get_objects():
        if type(thing).__name__ == "CudaTimer":
            type(thing).time_call = lambda self, fn: (fn(), CallTiming(5.0, 5.0, host_us=5.0))


def _no_waiting(record):
    for entry in [record.get("fence"), *(s.get("cuda") for s in record.get("storages") or [])]:
        if isinstance(entry, dict):
            entry["event_sync"] = False
    return record


def _hook():
    for runner in gc.get_objects():
        if type(runner).__name__ == "Runner" and hasattr(runner, "link"):
            honest = runner.link.send
            runner.link.send = lambda record, blobs=None, honest=honest: honest(_no_waiting(record), blobs)


_silence_and_forge()
_hook()


def custom_kernel(data):
    a, b, out = data
    torch.cuda._sleep(4_000_000)  # about 2 ms of queued work before the answer is written
    return torch.add(a, b, out=out)
