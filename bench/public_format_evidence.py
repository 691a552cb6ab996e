"""GPU evidence for issue 6 (public-format fidelity, faster and steadier ranked runs), in one run of < 8 min.

    python3 bench/public_format_evidence.py                 # on an H100/H200, from the repository root
    python3 bench/public_format_evidence.py --cpu-dry-run   # anywhere: every section that runs on a CPU

Every evaluation goes through one warm ``harness.host.server.HarnessServer``; each job still gets a fresh process.

a) Noise and speed: 5 fresh ranked evaluations of the plain-PyTorch reference solutions of vectoradd,
   grayscale, matmul and histogram, and of the contention-heavy public-format histogram of the conformance
   suite: scores, CV, max/min and wall per evaluation (caller's view), beside the previous figures.
b) Diagnostics of the same runs, one row per run: SM clock (median and lowest per-call reading), L2-flush
   time, the host's share of the call (near 1 when the call waits on the device midway, as bincount
   does), the largest per-address spread of a shape's medians, first-call and warm-up readings, compile
   seconds and where the wall time went (phases). A run that reads slow says here whether its clock,
   its memory speed, its host or its placement differed.
c) Placement: a contention-heavy atomic histogram (95 % of 4 Mi updates on one bin) timed by the
   harness's own timer with its 256 bins at 64 different addresses in one process. A spread well above
   the run-to-run noise means placement (L2 slice, memory partition) decides atomics' speed.
d) The conformance suite's problems on this device: every solution, CUDA-only ones included; correct ones
   must pass, wrong ones must fail with the kind and words their header names.
e) Every shipped solution (problems/*/solutions) in ranked mode: pass or fail as labelled.
a2, b2) As a and b for the other shipped problems (identity, vectorsum, softmax, prefixsum), for those
   that can start before 470 s.

Sections d and e shorten the timed loops (verdicts, not timings). Prints each table as its section ends
and a summary at the end; with ``$OUT`` set also writes ``$OUT/public_format_evidence.{json,md}``.
Exit status: 2 without a CUDA GPU (and no --cpu-dry-run), 1 when a section broke or a verdict was not
the expected one, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH.parent), str(BENCH), str(BENCH.parent / "tests" / "conformance")]

import conformance_kit  # noqa: E402
from evidence_jobs import PROBLEMS, Evaluation, Evaluator, plain_solution  # noqa: E402
from evidence_report import Report, percent, say  # noqa: E402
from gpu_evidence import system, verdicts  # noqa: E402

from harness import HarnessServer, Problem, Status, load_problem  # noqa: E402

RUNS = 5
NOISE = ("vectoradd", "grayscale", "matmul", "histogram")
MORE_NOISE = ("identity", "vectorsum", "softmax", "prefixsum")  # the other shipped problems, if time is left
MORE_NOISE_DEADLINE_S = 470.0
CONTENTION = "histogram_py"  # the conformance suite's public-format histogram, up to 95 % on one bin
VERDICT_SHAPE_BUDGET_MS = 30.0
VERDICT_BUDGET_S = 420.0  # sections d and e start no evaluation after this many seconds
# What docs/benchmarks.md recorded before this issue, for the table (H200 unless it says H100).
PREVIOUS = {
    "vectoradd": "H200: CV 0.12-0.17 %, wall 2.4-5.0 s; public pmpp vectoradd on H100: CV 0.08 %, 4.3-5.0 s",
    "grayscale": "H200: CV 0.06-0.40 %, wall 1.5-2.2 s; public pmpp grayscale on H100: CV 0.11 %, 5.4-6.4 s",
    "matmul": "H200: CV 0.10 % over 15 (after the launch-hiding fix), wall 2.5-3.7 s",
    "histogram": "not measured before",
    CONTENTION: "public pmpp histogram (6 shapes) on H100: CV 4.0 % (one run 11 % slow), 8.8-10.3 s",
}
STOPS = {"converged": "c", "budget": "b", "cap": "X"}  # how each shape's loop ended, in the samples column
PLACEMENT_OFFSETS = 64
PLACEMENT_STRIDE = 1024  # int64 bins: 8 KiB between two placements
PLACEMENT_CALLS = 15
PLACEMENT_UPDATES = 1 << 22
_started = time.monotonic()


# ---- a, b: noise, speed and diagnostics ----------------------------------------------------------------


def noise(
    report: Report,
    evaluator: Evaluator,
    runs: int,
    subjects: list[tuple[str, Problem, Path]],
    section: str = "a",
    deadline_s: float | None = None,
) -> None:
    """Sections a and b (or a2 and b2) over ``subjects``; none starts after ``deadline_s`` into the run."""
    rows, diagnostics, figures = [], [], {}
    for name, problem, solution in subjects:
        if deadline_s is not None and time.monotonic() - _started > deadline_s:
            rows.append([name, "-", "skipped: time budget", None, None, None, None, None, PREVIOUS.get(name, "")])
            continue
        done = [evaluator.evaluate(problem, solution) for _ in range(runs)]
        scores = [e.result.score_us for e in done if e.result.score_us is not None]
        walls = [e.wall_s for e in done]
        cv = statistics.stdev(scores) / statistics.fmean(scores) if len(scores) > 1 else None
        rows.append(
            [
                name,
                f"{len(problem.task.benchmarks_for(evaluator.device))} shapes",
                f"{len(scores)}/{runs}",
                " ".join(f"{s:.2f}" for s in scores),
                percent(cv),
                max(scores) / min(scores) if scores else None,
                " ".join(f"{w:.2f}" for w in walls),
                max(walls),
                PREVIOUS.get(name, ""),
            ]
        )
        figures[name] = {
            "solution": solution.name,
            "scores_us": scores,
            "walls_s": walls,
            "cv": cv,
            "runs": [_run_figures(e) for e in done],
        }
        diagnostics += [_diagnostic_row(name, run, e) for run, e in enumerate(done, 1)]
        for run, evaluation in enumerate(done, 1):
            if failure := evaluation.result.failure:
                report.mismatches.append(f"{section}) {name} run {run}")
                report.note(f"{section}) {name} run {run}: {failure.kind.value}: {failure.message}")
    report.figures[f"{section}_noise"] = figures
    report.table(
        f"{section}) ranked score across {runs} fresh processes, and wall per evaluation",
        ["problem", "shapes", "passed", "scores us", "CV", "max/min", "walls s", "max wall s", "before"],
        rows,
    )
    report.table(
        f"b{section[1:]}) per run: what the timed calls saw",
        [
            "problem",
            "run",
            "score us",
            "wall s",
            "SM MHz median/min",
            "flush us",
            "max address spread",
            "first call / median, worst shape",
            "warm-up / median, worst shape",
            "host / median, most",
            "compile s",
            "samples",
            "shape medians us",
            "flags",
            "phases s",
        ],
        diagnostics,
    )
    report.note(
        f"b{section[1:]}) A slow run with a lower SM clock points at clocks; with a slower flush at memory "
        "speed; with a higher host share at the host; with a large address spread (also in fast runs) at "
        "placement. Phases: where the wall went inside the evaluation (the rest of the wall is process "
        "start, staging and the result's trip)."
    )


def _shipped(names: tuple[str, ...]) -> list[tuple[str, Problem, Path]]:
    return [(name, load_problem(PROBLEMS / name), plain_solution(name)) for name in names]


def _contention(device: str) -> tuple[str, Problem, Path]:
    solution = next(s.path for s in conformance_kit.solutions() if s.problem == CONTENTION and s.correct)
    return CONTENTION, _runnable_on(load_problem(conformance_kit.PROBLEMS / CONTENTION), device), solution


def _runnable_on(problem: Problem, device: str) -> Problem:
    """Public-format problems are CUDA-only; a CPU dry run lets them run there, still as written."""
    if device == "cuda":
        return problem
    return dataclasses.replace(problem, task=dataclasses.replace(problem.task, devices=["cpu", "cuda"]))


def _run_figures(evaluation: Evaluation) -> dict[str, Any]:
    result = evaluation.result
    return {
        "status": result.status.value,
        "score_us": result.score_us,
        "wall_s": evaluation.wall_s,
        "compile_s": result.compile_s,
        "phases_s": result.phases_s,
        "shapes": [
            {
                "spec": s.spec,
                "median_us": s.median_us,
                "n": s.n,
                "stop": s.stop_reason,
                "first_call_us": s.first_call_us,
                "warmup_us": s.warmup_us,
                "clock_mhz": s.clock_mhz,
                "min_clock_mhz": s.min_clock_mhz,
                "flush_us": s.flush_us,
                "host_us": s.host_us,
                "address_spread": s.address_spread,
                "p10_us": s.p10_us,
                "p90_us": s.p90_us,
                "flags": s.flags,
            }
            for s in result.shapes
        ],
    }


def _diagnostic_row(name: str, run: int, evaluation: Evaluation) -> list[Any]:
    result = evaluation.result
    shapes = result.shapes
    clocks = [s.clock_mhz for s in shapes if s.clock_mhz]
    lowest = [s.min_clock_mhz for s in shapes if s.min_clock_mhz]
    flushes = [s.flush_us for s in shapes if s.flush_us]
    spreads = [s.address_spread for s in shapes if s.address_spread is not None]
    first = max((s.first_call_us / s.median_us for s in shapes if s.median_us > 0), default=None)
    warm = max((max(s.warmup_us) / s.median_us for s in shapes if s.warmup_us and s.median_us > 0), default=None)
    host = max((s.host_us / s.median_us for s in shapes if s.host_us is not None and s.median_us > 0), default=None)
    phases = " ".join(f"{k}={v:.2f}" for k, v in sorted(result.phases_s.items()) if v >= 0.01)
    return [
        name,
        run,
        result.score_us,
        evaluation.wall_s,
        f"{statistics.median(clocks):.0f}/{min(lowest):.0f}" if clocks and lowest else None,
        statistics.median(flushes) if flushes else None,
        percent(max(spreads)) if spreads else None,
        f"{first:.1f}x" if first else None,
        f"{warm:.1f}x" if warm else None,
        f"{host:.2f}" if host is not None else None,
        result.compile_s,
        " ".join(f"{s.n}{STOPS.get(s.stop_reason, '?')}" for s in shapes),
        " ".join(f"{s.median_us:.4g}" for s in shapes),
        " ".join(sorted({flag for s in shapes for flag in s.flags})) or "-",
        phases,
    ]


# ---- c: placement of a contended atomic ------------------------------------------------------------------


def placement(report: Report) -> None:
    import torch

    from harness.timing import make_timer

    timer = make_timer("cuda")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(20261121)
    hot = torch.randint(0, 256, (), device="cuda", generator=gen)
    values = torch.randint(0, 256, (PLACEMENT_UPDATES,), device="cuda", generator=gen)
    values[torch.rand(PLACEMENT_UPDATES, device="cuda", generator=gen) < 0.95] = hot
    ones = torch.ones(PLACEMENT_UPDATES, dtype=torch.int64, device="cuda")
    arena = torch.zeros(PLACEMENT_OFFSETS * PLACEMENT_STRIDE, dtype=torch.int64, device="cuda")
    medians = []
    for slot in range(PLACEMENT_OFFSETS):
        bins = arena[slot * PLACEMENT_STRIDE : slot * PLACEMENT_STRIDE + 256]
        times = [
            timer.time_call(lambda b=bins: b.index_add_(0, values, ones))[1].event_us for _ in range(PLACEMENT_CALLS)
        ]
        medians.append(statistics.median(times))
    spread = max(medians) / min(medians) - 1
    report.figures["c_placement"] = {"medians_us": medians, "spread": spread}
    quartiles = statistics.quantiles(medians, n=4)
    report.table(
        "c) one contended atomic histogram, 256 bins at 64 addresses 8 KiB apart (medians of 15 calls)",
        ["min us", "q1 us", "median us", "q3 us", "max us", "max/min - 1"],
        [[min(medians), quartiles[0], quartiles[1], quartiles[2], max(medians), percent(spread)]],
    )


# ---- d: the conformance suite on this device ----------------------------------------------------------------


def conformance(report: Report, evaluator: Evaluator) -> None:
    rows, figures = [], []
    for solution in conformance_kit.solutions():
        problem = _runnable_on(load_problem(conformance_kit.PROBLEMS / solution.problem), evaluator.device)
        if evaluator.device == "cpu" and solution.requires_cuda:
            rows.append([solution.id, "-", "skipped", "needs CUDA", "", ""])
            continue
        if time.monotonic() - _started > VERDICT_BUDGET_S:
            rows.append([solution.id, "-", "skipped", "time budget", "", ""])
            continue
        result = evaluator.evaluate(problem, solution.path, shape_budget_ms=VERDICT_SHAPE_BUDGET_MS).result
        if solution.correct:
            wanted, ok = "pass", result.status is Status.PASSED
        else:
            kind, words = solution.expected
            wanted = f"{kind}: {words}"
            ok = (
                result.status is Status.FAILED and result.failure.kind.value == kind and words in result.failure.message
            )
        if not ok:
            report.mismatches.append(f"d) {solution.id}")
        message = result.failure.message if result.failure else ""
        rows.append(
            [
                solution.id,
                wanted,
                result.status.value,
                result.failure.kind.value if result.failure else "-",
                "ok" if ok else "MISMATCH",
                " ".join(message.split())[:160],
            ]
        )
        figures.append(
            {
                "solution": solution.id,
                "expected": wanted,
                "status": result.status.value,
                "ok": ok,
                "message": message,
                "compile_s": result.compile_s,
                "wall_s": result.wall_s,
            }
        )
    report.figures["d_conformance"] = figures
    report.table(
        "d) conformance problems (public format), ranked mode",
        ["solution", "expected", "status", "kind", "verdict", "message"],
        rows,
    )


# ---- main ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="run sections a, b, d and e on the CPU with 2 evaluations each (no GPU needed)",
    )
    parser.add_argument("--sections", default="a,c,d,e,a2", help="which sections to run (default: all)")
    parser.add_argument("--problems", default="", help="shipped problems for sections a, e and a2 (default: all)")
    args = parser.parse_args(argv)
    sections = set(args.sections.split(","))
    only = set(args.problems.split(",")) if args.problems else None

    def chosen(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(n for n in names if only is None or n in only)

    logging.basicConfig(level=logging.WARNING, format="  log %(levelname)s %(name)s: %(message)s")
    import torch

    if not args.cpu_dry_run and not torch.cuda.is_available():
        say(
            "bench/public_format_evidence.py needs a CUDA GPU and none is visible; run it on a GPU machine, "
            "or pass --cpu-dry-run to check the script on this one."
        )
        return 2
    device, runs = ("cpu", 2) if args.cpu_dry_run else ("cuda", RUNS)
    report = Report(name="public_format_evidence")
    report.run_section("system", lambda: system(report, device))
    with HarnessServer() as server:
        evaluator = Evaluator(server, device)
        if "a" in sections:
            report.run_section(
                "a, b) noise and diagnostics",
                lambda: noise(
                    report, evaluator, runs, [*_shipped(chosen(NOISE)), *([] if only else [_contention(device)])]
                ),
            )
        if device == "cuda" and "c" in sections:
            report.run_section("c) placement", lambda: placement(report))
        if "d" in sections:
            report.run_section("d) conformance", lambda: conformance(report, evaluator))
        if "e" in sections:
            report.run_section(
                "e) shipped solutions",
                lambda: verdicts(report, evaluator, "e", VERDICT_SHAPE_BUDGET_MS, VERDICT_BUDGET_S, only),
            )
        if "a2" in sections:
            report.run_section(
                "a2, b2) the other shipped problems",
                lambda: noise(report, evaluator, runs, _shipped(chosen(MORE_NOISE)), "a2", MORE_NOISE_DEADLINE_S),
            )
    elapsed = time.monotonic() - _started
    report.note(
        f"Summary: {len(report.broken)} broken section(s) {report.broken or ''}, "
        f"{len(report.mismatches)} unexpected verdict(s) {report.mismatches or ''}, {elapsed:.0f} s in all."
    )
    if out := os.environ.get("OUT"):
        report.write(Path(out))
    return 1 if report.broken or report.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
