"""GPU evidence for the evaluation harness (issue 2, "Done means"), in one run of under 8 minutes.

    python3 bench/gpu_evidence.py                  # on a CUDA machine, from the repository root
    python3 bench/gpu_evidence.py --cpu-dry-run    # anywhere: sections a, c and d on the CPU, 2 runs each

Every evaluation goes through one ``harness.host.server.HarnessServer`` (a warm parent; each job still gets a
fresh process). This process never runs a cheat; it uses CUDA itself only for sections b and e
(``evidence_timing``).

a) Noise: the plain-PyTorch correct solution of vectoradd, matmul and grayscale, 5 ranked evaluations
   each: score and wall seconds per evaluation as the caller sees it, score CV, max/min, max wall, and
   the per-shape medians of run 1.
b) The same solutions and benchmark shapes timed here with ``triton.testing.do_bench`` (median), beside
   the harness's run-1 medians; gaps over 5 % are marked.
c) Every solution under ``problems/*/solutions/{correct,wrong}`` in ranked mode: correct ones must
   pass, wrong ones must not (on the CPU, CUDA-only ones must be refused as unsupported_device).
d) The cheats in ``bench/fixtures`` on vectoradd: side_stream rejected, patch_elapsed caught or given no
   advantage over the honest score, patch_checker failed.
e) Graph timing: vectoradd's event-timed medians (a tiny shape and the smallest benchmark shape)
   beside ``harness.judge.graph_timing.graph_replay_us`` run here, plus two kernels it must decline or flag.

Prints each table as its section ends and a summary at the end. With ``$OUT`` set it also writes
``$OUT/gpu_evidence.json`` (every figure) and ``$OUT/gpu_evidence.md`` (the tables). Exit status: 2 when
no CUDA GPU is visible (without --cpu-dry-run), 1 when a section broke or a verdict was not the
expected one, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout, no install needed

from harness import EvalResult, FailureKind, HarnessServer, Problem, Status, load_problem  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_jobs import (  # noqa: E402
    PROBLEMS,
    Evaluation,
    Evaluator,
    plain_solution,
    requires_cuda,
)
from evidence_report import Report, cell, elapsed_s, listed, percent, say, shape_label  # noqa: E402
from evidence_timing import graph_timing, versus_do_bench  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NOISE_PROBLEMS = ("vectoradd", "matmul", "grayscale")
TIME_BUDGET_S = 400.0  # section c starts no evaluation after this (the target is < 8 min)
ADVANTAGE_LIMIT = 0.10  # a patched timer may not beat the honest score by more than this


# ---- sections -------------------------------------------------------------------------------------------


def noise(report: Report, evaluator: Evaluator, runs: int) -> dict[str, list[Evaluation]]:
    """Section a; returns the evaluations per problem for the later sections."""
    evaluations: dict[str, list[Evaluation]] = {}
    rows, shape_rows = [], []
    for name in NOISE_PROBLEMS:
        problem, solution = load_problem(PROBLEMS / name), plain_solution(name)
        evaluations[name] = done = [evaluator.evaluate(problem, solution) for _ in range(runs)]
        scores = [e.result.score_us for e in done if e.result.score_us is not None]
        walls = [e.wall_s for e in done]
        cv = statistics.stdev(scores) / statistics.fmean(scores) if len(scores) > 1 else None
        spread = max(scores) / min(scores) if scores else None
        run1 = [
            {
                "spec": s.spec,
                "median_us": s.median_us,
                "n": s.n,
                "stop": s.stop_reason,
                "ci_low_us": s.ci_low_us,
                "ci_high_us": s.ci_high_us,
            }
            for s in done[0].result.shapes
        ]
        figures = {
            "solution": solution.name,
            "statuses": [e.result.status.value for e in done],
            "scores_us": scores,
            "walls_s": walls,
            "cv": cv,
            "max_over_min": spread,
            "max_wall_s": max(walls),
            "run1_shapes": run1,
        }
        report.figures.setdefault("a_noise", {})[name] = figures
        rows.append(
            [
                name,
                solution.name,
                f"{len(scores)}/{runs}",
                " ".join(f"{s:.2f}" for s in scores),
                percent(cv),
                spread,
                " ".join(f"{w:.1f}" for w in walls),
                max(walls),
            ]
        )
        for run, evaluation in enumerate(done, 1):
            if failure := evaluation.result.failure:
                report.note(
                    f"a) {name} run {run}: {evaluation.result.status.value}, {failure.kind.value}: {failure.message}"
                )
        for stats in done[0].result.shapes:
            half_width = (stats.ci_high_us - stats.ci_low_us) / (2 * stats.median_us)
            shape_rows.append(
                [name, shape_label(stats.spec), stats.median_us, stats.n, percent(half_width), stats.stop_reason]
            )
    report.table(
        "a) ranked score across fresh processes",
        ["problem", "solution", "passed", "scores us", "CV", "max/min", "walls s", "max wall s"],
        rows,
    )
    report.table(
        "a) per-shape medians, run 1", ["problem", "shape", "median us", "n", "CI half-width", "stop"], shape_rows
    )
    return evaluations


def verdicts(
    report: Report,
    evaluator: Evaluator,
    section: str = "c",
    shape_budget_ms: float | None = None,
    budget_s: float = TIME_BUDGET_S,
    only: set[str] | None = None,
) -> None:
    """Section c (or ``section``): every shipped solution (of the problems in ``only``, when given) in ranked
    mode, verdict against its label; no evaluation starts ``budget_s`` seconds into the run."""
    rows, figures = [], []
    for task_file in sorted(PROBLEMS.glob("*/task.yml")):
        if only is not None and task_file.parent.name not in only:
            continue
        problem = load_problem(task_file.parent)
        for label in ("correct", "wrong"):
            for solution in sorted((task_file.parent / "solutions" / label).glob("*.py")):
                expected = _expected(label, solution, problem, evaluator.device)
                if elapsed_s() > budget_s:
                    rows.append(
                        [problem.name, f"{label}/{solution.name}", expected, "skipped", "time budget", "", None]
                    )
                    continue
                evaluation = evaluator.evaluate(problem, solution, shape_budget_ms=shape_budget_ms)
                ok = _matches(expected, evaluation.result)
                if not ok:
                    report.mismatches.append(f"{section}) {problem.name}/{label}/{solution.name}")
                rows.append(
                    [
                        problem.name,
                        f"{label}/{solution.name}",
                        expected,
                        evaluation.result.status.value,
                        evaluation.kind,
                        "ok" if ok else "MISMATCH",
                        evaluation.result.compile_s,
                    ]
                )
                figures.append(
                    {
                        "problem": problem.name,
                        "solution": f"{label}/{solution.name}",
                        "expected": expected,
                        "status": evaluation.result.status.value,
                        "kind": evaluation.kind,
                        "ok": ok,
                        "wall_s": evaluation.wall_s,
                        "compile_s": evaluation.result.compile_s,
                    }
                )
    report.figures[f"{section}_verdicts"] = figures
    report.table(
        f"{section}) every shipped solution, ranked mode",
        ["problem", "solution", "expected", "status", "failure kind", "verdict", "compile s"],
        rows,
    )
    report.note(
        f"{section}) mismatches: {sum(not f['ok'] for f in figures)} of {len(figures)} evaluated "
        f"({len(rows) - len(figures)} skipped)"
    )


def _expected(label: str, solution: Path, problem: Problem, device: str) -> str:
    if device not in problem.task.devices or (device == "cpu" and requires_cuda(solution)):
        return FailureKind.UNSUPPORTED_DEVICE.value
    return "pass" if label == "correct" else "fail"


def _matches(expected: str, result: EvalResult) -> bool:
    if expected == "pass":
        return result.passed
    if expected == "fail":
        return not result.passed
    return result.failure is not None and result.failure.kind.value == expected


def cheats(report: Report, evaluator: Evaluator, honest_scores: list[float]) -> None:
    """Section d."""
    problem = load_problem(PROBLEMS / "vectoradd")
    honest = statistics.median(honest_scores) if honest_scores else None
    rows, figures = [], []
    for fixture in sorted(FIXTURES.glob("*.py")):
        result = (evaluation := evaluator.evaluate(problem, fixture)).result
        wanted, ok = _cheat_verdict(fixture, result, honest, evaluator.device)
        if not ok:
            report.mismatches.append(f"d) {fixture.name}")
        speedup = honest / result.score_us - 1 if honest and result.score_us else None
        rows.append(
            [
                fixture.name,
                wanted,
                result.status.value,
                evaluation.kind,
                result.score_us,
                percent(speedup),
                "ok" if ok else "MISMATCH",
            ]
        )
        figures.append(
            {
                "fixture": fixture.name,
                "expected": wanted,
                "status": result.status.value,
                "kind": evaluation.kind,
                "score_us": result.score_us,
                "honest_us": honest,
                "ok": ok,
                "message": result.failure.message if result.failure else "",
            }
        )
    report.figures["d_cheats"] = figures
    report.table(
        f"d) cheats on vectoradd (honest score {cell(honest)} us)",
        ["fixture", "expected", "status", "failure kind", "score us", "speed-up vs honest", "verdict"],
        rows,
    )


def _cheat_verdict(fixture: Path, result: EvalResult, honest: float | None, device: str) -> tuple[str, bool]:
    """What a cheat fixture must get, and whether it got it."""
    kind = result.failure.kind if result.failure else None
    if device == "cpu" and requires_cuda(fixture):
        return FailureKind.UNSUPPORTED_DEVICE.value, kind is FailureKind.UNSUPPORTED_DEVICE
    if fixture.stem == "side_stream":
        return (
            "failed: escaped_timing or wrong_output",
            result.status is Status.FAILED and kind in (FailureKind.ESCAPED_TIMING, FailureKind.WRONG_OUTPUT),
        )
    if fixture.stem == "patch_elapsed":
        no_gain = (
            result.passed
            and honest is not None
            and result.score_us is not None
            and result.score_us >= honest * (1 - ADVANTAGE_LIMIT)
        )
        return (
            f"tampering, or at most {ADVANTAGE_LIMIT:.0%} faster than honest",
            kind is FailureKind.TAMPERING or no_gain,
        )
    return "not passed", not result.passed


def system(report: Report, device: str) -> None:
    from harness.device import system_info

    info = system_info(device)
    report.figures["system"] = dataclasses.asdict(info)
    report.note(
        f"GPU {info.gpu_name or '(none)'} | driver {info.driver or '-'} | CUDA {info.cuda or '-'} | "
        f"torch {info.torch} | triton {info.triton or '-'} | L2 {info.l2_bytes} B | python {info.python}"
    )


# ---- main -----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="run sections a, c and d on the CPU with 2 evaluations each (no GPU needed)",
    )
    args = parser.parse_args(argv)
    # INFO: graph timing says why it declined a kernel
    logging.basicConfig(level=logging.INFO, format="  log %(levelname)s %(name)s: %(message)s")
    import torch

    if not args.cpu_dry_run and not torch.cuda.is_available():
        say(
            "bench/gpu_evidence.py needs a CUDA GPU and none is visible; run it on a GPU machine, "
            "or pass --cpu-dry-run to check the script on this one."
        )
        return 2
    device, runs = ("cpu", 2) if args.cpu_dry_run else ("cuda", 5)
    report = Report()
    report.run_section("system", lambda: system(report, device))
    evaluations: dict[str, list[Evaluation]] = {}
    with HarnessServer() as server:
        evaluator = Evaluator(server, device)
        report.run_section("a) noise", lambda: evaluations.update(noise(report, evaluator, runs)))
        if device == "cuda":
            report.run_section("b) do_bench", lambda: versus_do_bench(report, evaluations, NOISE_PROBLEMS))
        honest = [e.result.score_us for e in evaluations.get("vectoradd", []) if e.result.score_us is not None]
        report.run_section("d) cheats", lambda: cheats(report, evaluator, honest))
        if device == "cuda":
            report.run_section("e) graph timing", lambda: graph_timing(report, evaluator))
        report.run_section("c) verdicts", lambda: verdicts(report, evaluator))
    elapsed = elapsed_s()
    report.note(
        f"Summary: {len(report.broken)} broken section(s){listed(report.broken)}, "
        f"{len(report.mismatches)} unexpected verdict(s){listed(report.mismatches)}, {elapsed:.0f} s in all."
    )
    if out := os.environ.get("OUT"):
        report.write(Path(out))
    return 1 if report.broken or report.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
