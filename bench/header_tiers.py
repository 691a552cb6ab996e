"""How long a first inline-CUDA build takes against lighter and lighter torch headers (issue 21's 20 s goal).

    python3 bench/header_tiers.py          # on a CUDA machine, from the repository root, ~5 min

Each tier is torch's own ``load_inline`` of vectoradd's inline-CUDA solution in a fresh process and an empty build
folder, with ``no_implicit_headers`` and the tier's header lines in place of ``torch/extension.h``; the module is
then loaded and checked against ``a + b``. ninja compiles the generated main.cpp beside the .cu, so a tier's wall
is about the longer of the two.

Prints one table; with $OUT set also writes $OUT/header_tiers.json.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.builds.header_tiers import CUDA_RUNTIME_HEADERS as RUNTIME  # noqa: E402
from harness.builds.header_tiers import LIGHT_CPP_HEADERS, LIGHT_CUDA_HEADERS  # noqa: E402

SOLUTION = REPO / "problems" / "vectoradd" / "solutions" / "correct" / "cuda_inline.py"
EXTENSION = re.compile(r"(?m)^[ \t]*#[ \t]*include[ \t]*<torch/extension\.h>")
ALIAS = "namespace torch { using namespace at; }"
TIERS: dict[str, tuple[str, ...] | None] = {
    "torch/extension.h (as written)": None,
    "torch/types.h (today's light)": LIGHT_CUDA_HEADERS,
    "ATen/ATen.h + alias": ("#include <ATen/ATen.h>", ALIAS, *RUNTIME),
    "ATen/core/Tensor.h + ATen/Functions.h + alias": (
        "#include <ATen/core/Tensor.h>",
        "#include <ATen/Functions.h>",
        ALIAS,
        *RUNTIME,
    ),
    "ATen/core/Tensor.h + the ops it names + alias": (
        "#include <ATen/core/Tensor.h>",
        "#include <ATen/ops/empty_like.h>",
        ALIAS,
        *RUNTIME,
    ),
}

CHILD = r"""
import json, sys, time, torch
from torch.utils.cpp_extension import load_inline
args = json.loads(sys.argv[1])
started = time.monotonic()
module = load_inline(**args)
built = time.monotonic() - started
a = torch.randn(1 << 20, device="cuda", dtype=torch.half)
b = torch.randn(1 << 20, device="cuda", dtype=torch.half)
print(json.dumps({"build_s": built, "correct": bool(torch.equal(module.add(a, b), a + b))}))
"""


def solution_arguments() -> dict:
    """The solution's load_inline arguments, read from its source's constants."""
    constants = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in ast.parse(SOLUTION.read_text()).body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper()
    }
    return {
        "cpp_sources": constants["CPP_SOURCE"],
        "cuda_sources": constants["CUDA_SOURCE"],
        "functions": ["add"],
        "extra_cuda_cflags": ["-O3"],
    }


def tier_arguments(name: str, headers: tuple[str, ...] | None, folder: Path) -> dict:
    base = solution_arguments()
    args = {**base, "name": f"tier_{abs(hash(name)) % 10**8}", "build_directory": str(folder), "verbose": False}
    if headers is None:
        return args
    cuda = EXTENSION.sub("", base["cuda_sources"])
    return {
        **args,
        "no_implicit_headers": True,
        "cpp_sources": [*LIGHT_CPP_HEADERS, base["cpp_sources"]],
        "cuda_sources": [*headers, cuda],
    }


def start(name: str, headers: tuple[str, ...] | None) -> tuple[subprocess.Popen, float, Path]:
    folder = Path(tempfile.mkdtemp(prefix="tier-"))
    args = tier_arguments(name, headers, folder)
    env = {**os.environ, "MAX_JOBS": str(os.cpu_count()), "TORCH_CUDA_ARCH_LIST": arch()}
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(args)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    return process, time.monotonic(), folder


def finish(process: subprocess.Popen, started: float, folder: Path) -> dict:
    out, err = process.communicate(timeout=600)
    wall = time.monotonic() - started
    steps = ninja_steps(folder)
    if process.returncode != 0:
        first = next((line for line in err.decode().splitlines() if "error" in line), err.decode()[-300:])
        return {"ok": False, "wall_s": wall, "error": first.strip()[:200], **steps}
    return {"ok": True, "wall_s": wall, **json.loads(out.decode().strip().splitlines()[-1]), **steps}


def ninja_steps(folder: Path) -> dict:
    """Seconds of the .cu and main.cpp compiles, from ninja's log."""
    log = folder / ".ninja_log"
    steps = {}
    if log.is_file():
        for line in log.read_text().splitlines()[1:]:
            begin, end, _, target, _ = line.split("\t")
            kind = "cu_s" if target.endswith(".cuda.o") else "cpp_s" if target.endswith("main.o") else "link_s"
            steps[kind] = (int(end) - int(begin)) / 1000
    return steps


def arch() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}{'a' if major >= 9 else ''}"


def main() -> None:
    import torch

    print(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}, {os.cpu_count()} CPUs", flush=True)
    rows = {}
    for name, headers in TIERS.items():
        rows[name] = finish(*start(name, headers))
        print(name, rows[name], flush=True)
    print("\n| tier | wall / .cu / main.cpp (s) | correct |")
    print("|---|---|---|")
    for name, row in rows.items():
        alone = (
            f"{row['wall_s']:.1f} / {row.get('cu_s', 0):.1f} / {row.get('cpp_s', 0):.1f}"
            if row["ok"]
            else f"failed: {row['error']}"
        )
        print(f"| {name} | {alone} | {row.get('correct', '')} |")
    if os.environ.get("OUT"):
        (Path(os.environ["OUT"]) / "header_tiers.json").write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
