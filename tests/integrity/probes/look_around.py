"""A correct vectoradd that first reports what it can see and do from inside its sandbox, as JSON."""

import json
import os
import resource
import socket

import torch

WATCHED = {}  # filled in by the test: name -> path to read
WRITES = {}  # filled in by the test: name -> path to write


def _try(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return f"errno {exc.errno}"


def _write(path):
    path = os.path.expandvars(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("planted\n")


def _read(path):
    with open(path, "rb") as handle:
        handle.read(1)


def _connect():
    socket.create_connection(("127.0.0.1", 4222), timeout=1).close()


def _status(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()
    return ""


seen_before = os.path.exists(os.path.join(os.environ.get("TORCH_EXTENSIONS_DIR", "/nowhere"), "p.txt"))
report = {
    "seen_before": seen_before,
    "uid": os.getuid(),
    "gid": os.getgid(),
    "groups": os.getgroups(),
    "cwd": os.getcwd(),
    "hostname": socket.gethostname(),
    "environ": dict(os.environ),
    "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "capabilities": _status("CapEff"),
    "no_new_privs": _status("NoNewPrivs"),
    "limits": {
        name: resource.getrlimit(getattr(resource, name))[0]
        for name in ("RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CORE", "RLIMIT_CPU")
    },
    "root": sorted(os.listdir("/")),
    "read": {name: _try(lambda p=path: _read(p)) for name, path in WATCHED.items()},
    "write": {name: _try(lambda p=path: _write(p)) for name, path in WRITES.items()},
    "network": _try(_connect),
}
print(json.dumps(report), flush=True)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
