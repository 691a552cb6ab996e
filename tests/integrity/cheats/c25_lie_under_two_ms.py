"""Issue 25, the final red team's CPU timing lie, scaled to what the CPU's old slack let through: a correct kernel that
does about 1.5 ms of work per call (a fixed count of Python steps, so a loaded machine does not shorten the work),
with the runner's guard silenced and its timer forged to report 0.5 us, the code hidden from the static pre-check in
``exec(b64decode(...))`` as the red team did. With host bytes on the runner's clock the judge tolerated 2 ms of
unexplained time per call, and this passed. Now the judge moves host bytes itself and counts the busiest thread, its
CPU slack is 600 us, and the 1.5 ms are named."""
from base64 import b64decode

import torch

_WORK = 50_000  # Python steps: 1.2-2 ms of one core on the machines this ran on
_HIDDEN = (
    "aW1wb3J0IGdjCmZvciB0aGluZyBpbiBnYy5nZXRfb2JqZWN0cygpOgogICAgaWYgdHlwZSh0aGluZykuX19uYW1lX18gPT0gIkd1"
    "YXJkIiBhbmQgaGFzYXR0cih0aGluZywgIl9mdW5jdGlvbnMiKToKICAgICAgICB0aGluZy5fYXR0cmlidXRlcy5jbGVhcigpCiAg"
    "ICAgICAgdGhpbmcuX2Z1bmN0aW9ucy5jbGVhcigpCmZvciB0aGluZyBpbiBnYy5nZXRfb2JqZWN0cygpOgogICAgaWYgdHlwZSh0"
    "aGluZykuX19uYW1lX18gPT0gIkNwdVRpbWVyIjoKICAgICAgICBob25lc3QgPSB0eXBlKHRoaW5nKS50aW1lX2NhbGwKICAgICAg"
    "ICBkZWYgdGltZV9jYWxsKHNlbGYsIGZuLCBob25lc3Q9aG9uZXN0KToKICAgICAgICAgICAgb3V0LCB0aW1pbmcgPSBob25lc3Qo"
    "c2VsZiwgZm4pCiAgICAgICAgICAgIHRpbWluZy5ldmVudF91cyA9IHRpbWluZy5zeW5jX3VzID0gdGltaW5nLmhvc3RfdXMgPSAw"
    "LjUKICAgICAgICAgICAgcmV0dXJuIG91dCwgdGltaW5nCiAgICAgICAgdHlwZSh0aGluZykudGltZV9jYWxsID0gdGltZV9jYWxs"
    "Cg=="
)
exec(b64decode(_HIDDEN))


def custom_kernel(data):
    a, b, out = data
    total = 0
    for step in range(_WORK):  # the work the forged time hides
        total += step
    return torch.add(a, b, out=out)
