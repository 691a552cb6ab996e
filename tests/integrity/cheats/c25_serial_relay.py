"""Issue 25's red team of the busiest-thread rule: a serial kernel (about 6 ms of Python steps per call) relayed
over two threads that live across calls, each doing half and waking the next, with the runner's guard and call
monitor silenced and its timer forged to report half the time, hidden from the static pre-check in
``exec(b64decode(...))``. Each thread's CPU time is half the work and all of it over the job's two cores is half
too, so the judge saw a call of half its length and the lie passed (on C cores a relay over C threads reports 1/C).
Now the job's CPU time counts up to the bracket's wall time (less the runner's waits for a core): threads that take
turns cannot hide in it."""

from base64 import b64decode

import torch

_HALF = 120_000  # Python steps per thread and call: about 3 ms of one core
_HIDDEN = (
    "aW1wb3J0IGdjCmltcG9ydCB0aHJlYWRpbmcKCl9nbyA9IFt0aHJlYWRpbmcuRXZlbnQoKSwgdGhyZWFkaW5nLkV2ZW50KCldCl9k"
    "b25lID0gW3RocmVhZGluZy5FdmVudCgpLCB0aHJlYWRpbmcuRXZlbnQoKV0KCgpkZWYgX3dvcmtlcihpKToKICAgIHdoaWxlIFRy"
    "dWU6CiAgICAgICAgX2dvW2ldLndhaXQoKQogICAgICAgIF9nb1tpXS5jbGVhcigpCiAgICAgICAgdG90YWwgPSAwCiAgICAgICAg"
    "Zm9yIHN0ZXAgaW4gcmFuZ2UoX0hBTEYpOgogICAgICAgICAgICB0b3RhbCArPSBzdGVwCiAgICAgICAgX2RvbmVbaV0uc2V0KCkK"
    "Cgpmb3IgaSBpbiByYW5nZSgyKToKICAgIHRocmVhZGluZy5UaHJlYWQodGFyZ2V0PV93b3JrZXIsIGFyZ3M9KGksKSwgZGFlbW9u"
    "PVRydWUpLnN0YXJ0KCkKZm9yIHRoaW5nIGluIGdjLmdldF9vYmplY3RzKCk6CiAgICBpZiB0eXBlKHRoaW5nKS5fX25hbWVfXyA9"
    "PSAiR3VhcmQiIGFuZCBoYXNhdHRyKHRoaW5nLCAiX2Z1bmN0aW9ucyIpOgogICAgICAgIHRoaW5nLl9hdHRyaWJ1dGVzLmNsZWFy"
    "KCkKICAgICAgICB0aGluZy5fZnVuY3Rpb25zLmNsZWFyKCkKICAgIGlmIHR5cGUodGhpbmcpLl9fbmFtZV9fID09ICJDYWxsTW9u"
    "aXRvciI6CiAgICAgICAgdGhpbmcuX2NoZWNrID0gbGFtYmRhOiBOb25lCmZvciB0aGluZyBpbiBnYy5nZXRfb2JqZWN0cygpOgog"
    "ICAgaWYgdHlwZSh0aGluZykuX19uYW1lX18gPT0gIkNwdVRpbWVyIjoKICAgICAgICBob25lc3QgPSB0eXBlKHRoaW5nKS50aW1l"
    "X2NhbGwKCiAgICAgICAgZGVmIHRpbWVfY2FsbChzZWxmLCBmbiwgaG9uZXN0PWhvbmVzdCk6CiAgICAgICAgICAgIG91dCwgdGlt"
    "aW5nID0gaG9uZXN0KHNlbGYsIGZuKQogICAgICAgICAgICB0aW1pbmcuZXZlbnRfdXMgPSB0aW1pbmcuc3luY191cyA9IHRpbWlu"
    "Zy5ob3N0X3VzID0gdGltaW5nLmV2ZW50X3VzIC8gMgogICAgICAgICAgICByZXR1cm4gb3V0LCB0aW1pbmcKCiAgICAgICAgdHlw"
    "ZSh0aGluZykudGltZV9jYWxsID0gdGltZV9jYWxsCg=="
)
exec(b64decode(_HIDDEN))


def custom_kernel(data):
    a, b, out = data
    for i in range(2):  # one after the other: never two at once
        _go[i].set()
        _done[i].wait()
        _done[i].clear()
    return torch.add(a, b, out=out)
