"""A correct vectoradd that first searches its own process memory for another job's marker, as JSON.

A marker is the prefix below followed by 32 hexadecimal digits. This file holds the prefix only in two halves
(and its pattern cannot match itself), so whatever it finds came from elsewhere. As a control it plants a
marker of its own at run time and must find that one.
"""

import json
import re
import secrets

import torch

_PATTERN = re.compile(rb"KRM" + rb"ARK-([0-9a-f]{32})")
_LARGEST = 1 << 30  # regions beyond this are reserved address space, not data


def _regions():
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            where, mode = fields[0], fields[1]
            name = fields[5] if len(fields) > 5 else ""
            if "r" not in mode or (name and not name.startswith("[") and not name.startswith("/memfd")):
                continue  # files (libraries, Python's own modules) hold no job's data
            if name in ("[vvar]", "[vsyscall]"):
                continue
            start, end = (int(x, 16) for x in where.split("-"))
            if end - start <= _LARGEST:
                yield start, end


def _scan():
    found = set()
    with open("/proc/self/mem", "rb", buffering=0) as mem:
        for start, end in _regions():
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            found.update(m.group(1).decode() for m in _PATTERN.finditer(data))
    return found


_own = secrets.token_hex(16)
_planted = ("KRM" + "ARK-" + _own).encode()  # the control: this one must be found
found = _scan()
print(json.dumps({"control": _own in found, "others": sorted(found - {_own})}), flush=True)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
