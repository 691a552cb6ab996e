"""Issue 25, the final red team's CPU timing lie as it was: an honest vectoradd whose timer is forged to a
sub-microsecond time (0.05 us), the guard silenced and the code hidden from the static pre-check in
``exec(b64decode(...))``. Its kernels take 30-150 us, well inside the judge's 600 us CPU slack, so the judge's clock
alone lets it through. What names it is the speed of light: no CPU core moves more than 1 TB/s, so vectoradd's
largest CPU shape (3.5 MB) needs at least 3.5 us of one core, 0.05 us only with 56 cores or more, and a faster time
is ``implausible_time``."""
from base64 import b64decode

import torch
from task import input_t, output_t

_HIDDEN = (
    "aW1wb3J0IGdjCmZvciBmb3VuZCBpbiBnYy5nZXRfb2JqZWN0cygpOgogICAgaWYgdHlwZShmb3VuZCkuX19uYW1lX18gPT0gIkd1"
    "YXJkIiBhbmQgaGFzYXR0cihmb3VuZCwgIl9mdW5jdGlvbnMiKToKICAgICAgICBmb3VuZC5fYXR0cmlidXRlcy5jbGVhcigpCiAg"
    "ICAgICAgZm91bmQuX2Z1bmN0aW9ucy5jbGVhcigpCnRpbWVycyA9IFtmb3VuZCBmb3IgZm91bmQgaW4gZ2MuZ2V0X29iamVjdHMo"
    "KSBpZiB0eXBlKGZvdW5kKS5fX25hbWVfXyA9PSAiQ3B1VGltZXIiXQpmb3IgdGltZXIgaW4gdGltZXJzOgogICAgcmVhbCA9IHR5"
    "cGUodGltZXIpLnRpbWVfY2FsbAogICAgZGVmIGZvcmdlZChzZWxmLCBmbiwgcmVhbD1yZWFsKToKICAgICAgICBvdXRwdXQsIHRp"
    "bWluZyA9IHJlYWwoc2VsZiwgZm4pCiAgICAgICAgdGltaW5nLmV2ZW50X3VzID0gdGltaW5nLnN5bmNfdXMgPSB0aW1pbmcuaG9z"
    "dF91cyA9IDAuMDUKICAgICAgICByZXR1cm4gb3V0cHV0LCB0aW1pbmcKICAgIHR5cGUodGltZXIpLnRpbWVfY2FsbCA9IGZvcmdl"
    "ZAo="
)
exec(b64decode(_HIDDEN))


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return torch.add(a, b)
