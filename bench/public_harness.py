"""The public harness's own evaluator on kernelrank's problems: score CV and wall per ranked evaluation.

    python bench/public_harness.py [--eval .public/eval.py] [--runs 5] vectoradd grayscale matmul histogram

GPU MODE's ``eval.py`` is not part of this repository: fetch it yourself (the public discord-cluster-manager's
``examples/eval.py``) and point ``--eval`` at it. For each problem under ``problems/`` this stages what that
evaluator expects in a fresh folder (the problem's staged files, its correct PyTorch solution as
``submission.py``, the benchmark shapes as ``key: value; ...`` lines), then runs
``python eval.py leaderboard FILE`` with ``POPCORN_FD`` and a fresh random ``POPCORN_SEED`` per run, as the
public runner does. The score is the problem's own ranking rule over the evaluator's per-shape means; "wall"
is the evaluator's process from start to exit. Run it beside ``bench/ranked_wall.py`` in one call for
figures that compare (docs/benchmarks.md). The last line is the summary as JSON.

Two additions to the staged ``utils.py``, because the public evaluator imports them from there and
kernelrank's problems get them from the harness instead: ``clear_l2_cache`` (writes a buffer larger than any
L2, as the public helper of that name does) and CUDA as the default device (kernelrank's judge sets it; the
public problems name the device in each ``generate_input``).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness import load_problem  # noqa: E402
from harness.stats import score  # noqa: E402

UTILS_ADDITIONS = """

# Added by bench/public_harness.py for the public evaluator (see its docstring).
torch.set_default_device("cuda")


def clear_l2_cache() -> None:
    torch.empty(512 * 1024 * 1024, dtype=torch.uint8, device="cuda").fill_(1)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="+", help="problem folders under problems/")
    parser.add_argument("--eval", type=Path, default=REPO / ".public" / "eval.py", help="the public eval.py")
    parser.add_argument("--runs", type=int, default=5, help="fresh evaluations per problem (default 5)")
    args = parser.parse_args()
    if not args.eval.is_file():
        print(f"{args.eval} is missing: fetch the public evaluator first (see this script's docstring).")
        return 2
    summary = {}
    for name in args.problems:
        problem = load_problem(REPO / "problems" / name)
        walls, scores = [], []
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix=f"public-{name}-") as folder:
                stage = Path(folder)
                _stage(problem, REPO / "problems" / name / "solutions" / "correct" / "pytorch.py", args.eval, stage)
                started = time.perf_counter()
                records, code, errors = _evaluate(stage)
                walls.append(time.perf_counter() - started)
            means = [
                float(records[f"benchmark.{i}.mean"]) / 1000
                for i in range(len(problem.task.benchmarks))
                if f"benchmark.{i}.mean" in records
            ]
            if code != 0 or records.get("check") != "pass" or len(means) != len(problem.task.benchmarks):
                print(f"{name} run {run + 1}: exit {code}, check {records.get('check')!r}: {errors[-600:]}")
                continue
            scores.append(score(means, problem.task.ranking_by))
            shapes = " ".join(f"{m:.2f}" for m in means)
            print(f"{name:10s} wall {walls[-1]:5.2f} s  score {scores[-1]:9.2f} us  shape means {shapes}", flush=True)
        cv = statistics.stdev(scores) / statistics.fmean(scores) if len(scores) > 1 else None
        summary[name] = {
            "walls_s": [round(w, 2) for w in walls],
            "median_wall_s": round(statistics.median(walls), 2),
            "scores_us": [round(s, 2) for s in scores],
            "cv": cv,
        }
    print(json.dumps(summary))
    return 0


def _stage(problem, solution: Path, evaluator: Path, stage: Path) -> None:
    for file_name, text in problem.files.items():
        (stage / file_name).write_text(text + UTILS_ADDITIONS if file_name == "utils.py" else text)
    shutil.copy(solution, stage / "submission.py")
    shutil.copy(evaluator, stage / "eval.py")
    lines = ["; ".join(f"{key}: {value}" for key, value in spec.items()) for spec in problem.task.benchmarks]
    (stage / "benchmarks.txt").write_text("\n".join(lines) + "\n")


def _evaluate(stage: Path) -> tuple[dict[str, str], int, str]:
    """Run the evaluator in leaderboard mode; its POPCORN_FD records, exit code and stderr."""
    read, write = os.pipe()
    environment = {**os.environ, "POPCORN_FD": str(write), "POPCORN_SEED": str(secrets.randbelow(2**31))}
    process = subprocess.Popen(
        [sys.executable, "eval.py", "leaderboard", "benchmarks.txt"],
        cwd=stage,
        env=environment,
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    errors = process.stderr.read() if process.stderr else ""
    code = process.wait()
    records = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    return records, code, errors


if __name__ == "__main__":
    sys.exit(main())
