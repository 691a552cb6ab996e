"""Wall seconds per ranked evaluation, and the score's CV, of plain-PyTorch references in fresh processes.

    python bench/ranked_wall.py [--runs 5] [--device cpu] [--root DIR] [--shapes] vectoradd grayscale matmul histogram
    python bench/ranked_wall.py --device cuda tests/conformance/problems/histogram_py    # a folder by path

A name is a folder under ROOT/problems with its solution in ``solutions/correct/pytorch.py``; a path (it holds a
"/") is a public-format problem folder whose solution is the first ``.py`` in its own ``solutions/correct``
(bench/fixtures/public_style) or else in ``tests/conformance/solutions/<its name>/correct`` (the conformance
suite's layout); a path ending in ``.py`` is that solution, in its problem's ``solutions/correct/``.

Each evaluation goes through one warm harness server, as a runner's would; "wall" is job handed over to
result received. ``--root`` measures another checkout's harness and problems instead of this one's (for
before/after figures, e.g. ``git archive <commit> | tar -x -C /tmp/before``); run the two alternately so
that drift of a shared machine hits both alike. The last line is the summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="+", help="problem folders under ROOT/problems")
    parser.add_argument("--runs", type=int, default=5, help="fresh evaluations per problem (default 5)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--shapes", action="store_true", help="also print each shape's figures for every run")
    parser.add_argument("--samples", action="store_true", help="with --shapes, also every timed call in order (µs)")
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="the checkout whose harness and problems to measure (default: this one)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    from harness import EvalJob, HarnessServer, Mode, load_problem

    summary = {}
    with HarnessServer() as server:
        for name in args.problems:
            folder, solution = _problem_and_solution(args.root, name)
            problem = load_problem(folder)
            walls, scores = [], []
            for _ in range(args.runs):
                job = EvalJob(
                    problem=problem,
                    submission_name=solution.name,
                    submission_source=solution.read_text(),
                    mode=Mode.RANKED,
                    device=args.device,
                    secret_seed=20261121,
                )
                started = time.perf_counter()
                result = server.evaluate(job)
                walls.append(time.perf_counter() - started)
                if result.score_us is None:
                    print(f"{name}: {result.status.value}: {result.failure}", flush=True)
                    continue
                scores.append(result.score_us)
                samples = " ".join(str(s.n) for s in result.shapes)
                print(
                    f"{name:10s} wall {walls[-1]:5.2f} s  score {result.score_us:9.2f} us  samples {samples}",
                    flush=True,
                )
                if args.shapes:
                    _print_shapes(result.shapes, args.samples)
            cv = statistics.stdev(scores) / statistics.fmean(scores) if len(scores) > 1 else None
            summary[name] = {
                "walls_s": [round(w, 2) for w in walls],
                "median_wall_s": round(statistics.median(walls), 2),
                "cv": cv,
            }
    print(json.dumps(summary))
    return 0


def _print_shapes(shapes, samples: bool) -> None:
    """Where a run's score comes from: each shape's median and what might have moved it."""
    for index, shape in enumerate(shapes):
        figures = {
            "median": shape.median_us,
            "min": shape.min_us,
            "ci": shape.ci_high_us - shape.ci_low_us,
            "MHz": shape.clock_mhz,
            "flush": shape.flush_us,
            "host": shape.host_us,
            "gap": shape.sync_gap_us,
            "addr spread %": None if shape.address_spread is None else 100 * shape.address_spread,
        }
        shown = "  ".join(f"{key} {value:.2f}" for key, value in figures.items() if value is not None)
        print(f"    shape {index + 1}: n {shape.n} ({shape.stop_reason})  {shown}  {' '.join(shape.flags)}")
        if samples:
            print("      warm-up " + " ".join(f"{t:.0f}" for t in shape.warmup_us))
            print("      calls   " + " ".join(f"{t:.0f}" for t in shape.samples_us))


def _problem_and_solution(root: Path, name: str) -> tuple[Path, Path]:
    if "/" not in name:
        folder = root / "problems" / name
        return folder, folder / "solutions" / "correct" / "pytorch.py"
    if name.endswith(".py"):  # a solution file in a problem's own solutions/correct/
        solution = root / name
        return solution.parents[2], solution
    folder = root / name
    solutions = folder / "solutions" / "correct"  # bench/fixtures/public_style keeps its solutions inside
    if not solutions.is_dir():
        solutions = root / "tests" / "conformance" / "solutions" / folder.name / "correct"
    return folder, sorted(solutions.glob("*.py"))[0]


if __name__ == "__main__":
    sys.exit(main())
