"""A correct vectoradd that searches its memory and heap for a ranked run's secrets.

Each secret arrives in two halves (``NEEDLES``, filled in by the test) and is only ever matched half by half,
so the whole value exists in this process's memory only if the harness put it there.
"""

import gc
import json

import torch

NEEDLES = {}


def _memory_holds(first: bytes, second: bytes) -> bool:
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("rw"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            at = chunk.find(first)
            while at >= 0:
                if chunk[at + len(first) : at + len(first) + len(second)] == second:
                    return True
                at = chunk.find(first, at + 1)
    return False


found = {name: _memory_holds(first.encode(), second.encode()) for name, (first, second) in NEEDLES.items()}
found["jobs holding a secret seed"] = sum(
    1 for o in gc.get_objects() if type(o).__name__ == "EvalJob" and getattr(o, "secret_seed", None)
)
print(json.dumps(found), flush=True)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
