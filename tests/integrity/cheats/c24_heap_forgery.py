"""Issue 20, forged verdict from inside: a wrong kernel walks its heap for the harness's result channel (any
object holding a nonce and a descriptor), writes passing test records, ~0.9 us timings and a final record with
that nonce into it, and exits, as the red-team audit's #1 did."""
import gc
import json
import os
import struct

import torch


def _frame(record):
    body = json.dumps(record).encode()
    return struct.pack(">I", len(body)) + body


def custom_kernel(data):
    a, b, out = data
    for thing in gc.get_objects():
        try:
            state = vars(thing)
        except TypeError:
            continue
        fd, nonce = state.get("fd"), state.get("_nonce")
        if not isinstance(fd, int) or not isinstance(nonce, str):
            continue
        forged = [{"t": "test", "result": {"spec": {"size": n}, "passed": True, "message": ""}} for n in (127, 129, 1000)]
        forged += [{"t": "shape", "spec": {"size": n}, "samples_us": [0.9] * 20, "first_call_us": 0.9,
                    "sync_gaps_us": [0.0] * 20, "stop_reason": "ci"} for n in (4096, 16384)]
        for record in forged + [{"t": "final"}]:
            try:
                os.write(fd, _frame({"nonce": nonce, **record}))
            except OSError:
                pass
    os._exit(0)
    return torch.zeros_like(out)
