"""First build of inline CUDA as people write it, through the harness server, beside the public harness (issue 26).

    python3 bench/first_build.py                 # on a CUDA machine, from the repository root, ~2-4 min
    python3 bench/first_build.py --cpu-dry-run   # here: the tier each source gets and the server's start, no builds

Three vectoradd sources, each evaluated once (test mode) through a fresh harness server with an empty compile cache,
so each pays its whole first build:

a) public style: ``AT_DISPATCH_FLOATING_TYPES_AND_HALF``, ``#include <torch/extension.h>`` in ``cpp_sources``,
   ``functions=[...]``, ``verbose=True`` (bench/fixtures/inline_dispatch_public_style.py);
b) kernelrank's shipped inline solution (problems/vectoradd/solutions/correct/cuda_inline.py);
c) ``at::`` operators, tensor arithmetic and ``TORCH_CHECK`` (bench/fixtures/inline_aten_ops.py).

The server's start (import torch, the preloads, reading what torch's header sets declare) is its warm-up and is
reported on its own row; "first result" is the evaluation from hand-over to result, "compile" the builder's share.
When the public harness's eval.py is under .public/ (bench/public_harness.py says how to get it), source a) also
runs through it in test mode with an empty torch extensions folder. Prints one markdown table; with $OUT set also
writes $OUT/first_build.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from inline_build_profile import load_inline_arguments  # noqa: E402
from public_harness import _stage  # noqa: E402

from harness import EvalJob, HarnessServer, Mode, load_problem  # noqa: E402
from harness.builds import build, header_tiers  # noqa: E402

VECTORADD = REPO / "problems" / "vectoradd"
SOURCES = {
    "a) public style (dispatch macros, torch/extension.h, verbose)": REPO
    / "bench"
    / "fixtures"
    / "inline_dispatch_public_style.py",
    "b) kernelrank's shipped inline solution": VECTORADD / "solutions" / "correct" / "cuda_inline.py",
    "c) at:: operators, tensor arithmetic, TORCH_CHECK": REPO / "bench" / "fixtures" / "inline_aten_ops.py",
}


def gpu_name() -> str:
    """The GPU's name from nvidia-smi (this process never opens CUDA: the jobs need the GPU to themselves)."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
        return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else "no GPU"
    except (OSError, subprocess.SubprocessError):
        return "no GPU"


def planned_tier(source: Path) -> str:
    """The tier the builder will try first for the source's load_inline call (header_tiers.plan)."""
    from torch.utils import cpp_extension

    arguments = load_inline_arguments(source)
    request = build.extension_request(arguments, "", {})
    if request is None:
        return "built in the job (arguments are not plain data)"
    ops_folder = Path(cpp_extension.include_paths()[0]) / "ATen" / "ops"
    plan = header_tiers.plan(request.options, ops_folder, header_tiers.vocabulary())
    return " then ".join([name for name, _ in plan] + ["as written"])


def first_build(source: Path, cache: Path, dry_run: bool) -> dict[str, Any]:
    """Start a fresh harness server on an empty compile cache and evaluate ``source`` once; its timings."""
    os.environ["KERNELRANK_BUILD_CACHE"] = str(cache)
    os.environ["KERNELRANK_HARNESS_LOG"] = "INFO"  # the server's log names the tier each build used, and its seconds
    server = HarnessServer()
    started = time.monotonic()
    server.start()
    row: dict[str, Any] = {"server_start_s": time.monotonic() - started}
    try:
        if dry_run:
            return row
        job = EvalJob(
            problem=load_problem(VECTORADD),
            submission_name=source.name,
            submission_source=source.read_text(),
            mode=Mode.TEST,
            device="cuda",
            secret_seed=20261127,
            run_id=f"first-build-{source.stem}",
        )
        started = time.monotonic()
        result = server.evaluate(job)
        row |= {
            "first_result_s": time.monotonic() - started,
            "compile_s": result.compile_s or 0.0,
            "status": result.status.value,
        }
        if result.failure is not None:
            row["failure"] = f"{result.failure.kind}: {result.failure.message}"[:300]
        return row
    finally:
        server.close()


def public_harness(evaluator: Path, source: Path) -> dict[str, Any]:
    """The public eval.py in test mode on ``source``, with an empty torch extensions folder: its wall and verdict."""
    problem = load_problem(VECTORADD)
    with tempfile.TemporaryDirectory(prefix="first-build-public-") as folder:
        stage = Path(folder) / "stage"
        stage.mkdir()
        _stage(problem, source, evaluator, stage)
        lines = ["; ".join(f"{key}: {value}" for key, value in spec.items()) for spec in problem.task.tests]
        (stage / "tests.txt").write_text("\n".join(lines) + "\n")
        read, write = os.pipe()
        environment = {**os.environ, "POPCORN_FD": str(write), "TORCH_EXTENSIONS_DIR": str(Path(folder) / "ext")}
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "eval.py", "test", "tests.txt"],
            cwd=stage,
            env=environment,
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(write)
        with os.fdopen(read) as pipe:
            records = dict(line.split(": ", 1) for line in pipe.read().splitlines() if ": " in line)
        errors = process.stderr.read() if process.stderr else ""
        code = process.wait()
        wall = time.monotonic() - started
    row: dict[str, Any] = {"wall_s": wall, "check": records.get("check"), "exit": code}
    if code != 0 or records.get("check") != "pass":
        row["errors"] = errors[-400:]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-dry-run", action="store_true", help="plan and start servers only; compile nothing")
    parser.add_argument("--eval", type=Path, default=REPO / ".public" / "eval.py", help="the public eval.py")
    args = parser.parse_args()
    gpu = gpu_name()
    if gpu == "no GPU" and not args.cpu_dry_run:
        print("No GPU here: run with --cpu-dry-run, or on a CUDA machine.")
        return 2
    import torch.utils.cpp_extension  # noqa: F401  (imported before the clock: the server has it preloaded)

    started = time.monotonic()
    header_tiers.vocabulary()
    vocabulary_s = time.monotonic() - started
    rows = {}
    with tempfile.TemporaryDirectory(prefix="first-build-") as work:
        for index, (label, source) in enumerate(SOURCES.items()):
            rows[label] = {
                "tier": planned_tier(source),
                **first_build(source, Path(work) / str(index), args.cpu_dry_run),
            }
            print(label, rows[label], flush=True)
    public = None
    if args.eval.is_file() and not args.cpu_dry_run:
        public = public_harness(args.eval, next(iter(SOURCES.values())))
        print("public harness", public, flush=True)
    print_table(gpu, rows, public, vocabulary_s, args.eval)
    if os.environ.get("OUT"):
        summary = {"gpu": gpu, "vocabulary_s": vocabulary_s, "rows": rows, "public": public}
        (Path(os.environ["OUT"]) / "first_build.json").write_text(json.dumps(summary, indent=1))
    failed = [label for label, row in rows.items() if row.get("status") not in (None, "passed")]
    return 1 if failed or (public is not None and public.get("check") != "pass") else 0


def print_table(gpu: str, rows: dict[str, dict[str, Any]], public: dict | None, vocabulary_s: float, evaluator: Path):
    print(f"\nFirst inline-CUDA builds, {gpu}, {os.cpu_count()} CPUs, a fresh harness server and empty cache each\n")
    print("| source | tiers (planned) | server start (warm-up) s | first result s | compile s | status |")
    print("|---|---|---|---|---|---|")
    for label, row in rows.items():
        status = row.get("failure") or row.get("status", "not run (dry run)")
        first = f"{row['first_result_s']:.1f}" if "first_result_s" in row else "-"
        compiled = f"{row['compile_s']:.1f}" if "compile_s" in row else "-"
        print(f"| {label} | {row['tier']} | {row['server_start_s']:.1f} | {first} | {compiled} | {status} |")
    if public is not None:
        verdict = f"check {public['check']}, exit {public['exit']}"
        print(
            f"| a) through the public harness's eval.py (test mode) | as written | - | {public['wall_s']:.1f} | - | "
            f"{verdict} |"
        )
    elif not evaluator.is_file():
        print(f"\n{evaluator} is missing: the public harness was not run.")
    print(f"\nReading what torch's header sets declare (in the server's start above): {vocabulary_s:.1f} s here.")


if __name__ == "__main__":
    sys.exit(main())
