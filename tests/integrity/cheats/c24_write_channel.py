"""Issue 20, a runner that writes the judge's channel: a forged "done" answer with a tiny time, then passing
records with any nonce it can find, into every descriptor it holds; then the right answer."""
import gc
import json
import os
import struct

import torch


def _frame(record):
    body = json.dumps(record).encode()
    return struct.pack(">I", len(body)) + body


_nonces = []
for thing in gc.get_objects():
    try:
        nonce = vars(thing).get("_nonce")
    except TypeError:
        continue
    if isinstance(nonce, str):
        _nonces.append(nonce)


def custom_kernel(data):
    a, b, out = data
    forged = [_frame({"t": "done", "timing": {"event_us": 0.9, "sync_us": 0.9}, "value": {"value": None},
                      "storages": []})]
    forged += [_frame({"nonce": n, "t": "test", "result": {"spec": {}, "passed": True}}) for n in _nonces or ["?"]]
    for fd in range(3, 256):
        for frame in forged:
            try:
                os.write(fd, frame)
            except OSError:
                pass
    return torch.add(a, b, out=out)
