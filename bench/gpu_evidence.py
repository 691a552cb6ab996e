"""GPU evidence for the evaluation harness (issue 2, "Done means"), in one run of under 8 minutes.

    python3 bench/gpu_evidence.py                  # on a CUDA machine, from the repository root
    python3 bench/gpu_evidence.py --cpu-dry-run    # anywhere: sections a, c and d on the CPU, 2 runs each

Every evaluation goes through one ``harness.server.HarnessServer`` (a warm parent; each job still gets a
fresh process). This process never runs a cheat; it uses CUDA itself only for sections b and e.

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
   beside ``harness.graph_timing.graph_replay_us`` run here, plus two kernels it must decline or flag.

Prints each table as its section ends and a summary at the end. With ``$OUT`` set it also writes
``$OUT/gpu_evidence.json`` (every figure) and ``$OUT/gpu_evidence.md`` (the tables). Exit status: 2 when
no CUDA GPU is visible (without --cpu-dry-run), 1 when a section broke or a verdict was not the
expected one, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import logging
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout, no install needed

from harness import EvalResult, FailureKind, HarnessServer, Mode, Problem, Status, load_problem  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_jobs import (  # noqa: E402
    PROBLEMS,
    Evaluation,
    Evaluator,
    load_kernel,
    plain_solution,
    problem_modules,
    requires_cuda,
)
from evidence_report import Report, cell, elapsed_s, listed, percent, say  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NOISE_PROBLEMS = ("vectoradd", "matmul", "grayscale")
TIME_BUDGET_S = 400.0  # section c starts no evaluation after this (the target is < 8 min)
GAP_NOTE = 0.05  # harness vs do_bench gaps above this are marked
ADVANTAGE_LIMIT = 0.10  # a patched timer may not beat the honest score by more than this
TINY_SPEC = {"size": 1024, "seed": 7001}  # a vectoradd shape whose event time is mostly fixed cost


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
                [name, _spec(stats.spec), stats.median_us, stats.n, percent(half_width), stats.stop_reason]
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


def sm_clocks_during(fn: Callable[[], Any]) -> tuple[Any, float | None]:
    """Run ``fn`` while a thread samples the SM clock through NVML; returns (fn's value, median MHz)."""
    import threading

    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch_device_index())
    except Exception:  # no NVML here: the figure is simply absent
        return fn(), None
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
            done.wait(0.002)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        value = fn()
    finally:
        done.set()
        thread.join()
    return value, statistics.median(samples) if samples else None


def torch_device_index() -> int:
    import torch

    return torch.cuda.current_device()


def versus_do_bench(report: Report, evaluations: dict[str, list[Evaluation]]) -> None:
    """Section b, with the SM clock sampled during each measurement to explain any gap."""
    import torch
    from triton.testing import do_bench

    from harness.timing import make_timer

    timer = make_timer("cuda")
    rows, figures = [], []
    for name in NOISE_PROBLEMS:
        shapes = evaluations[name][0].result.shapes if name in evaluations else []
        harness_median = {_spec(s.spec): s.median_us for s in shapes}
        with problem_modules(name) as reference:
            kernel = load_kernel(plain_solution(name))
            for spec in load_problem(PROBLEMS / name).task.benchmarks:
                with torch.device("cuda"):
                    data = reference.generate_input(**spec)
                call = functools.partial(kernel, data)
                theirs, theirs_mhz = sm_clocks_during(lambda c=call: do_bench(c, return_mode="median") * 1000)
                paced, paced_mhz = sm_clocks_during(
                    lambda c=call: statistics.median(timer.time_call(c)[1].event_us for _ in range(100))
                )
                ours = harness_median.get(_spec(spec))
                gap = ours / theirs - 1 if ours is not None else None
                mark = "gap > 5 %" if gap is not None and abs(gap) > GAP_NOTE else ""
                rows.append([name, _spec(spec), ours, theirs, percent(gap), theirs_mhz, paced, paced_mhz, mark])
                figures.append(
                    {
                        "problem": name,
                        "spec": spec,
                        "harness_us": ours,
                        "do_bench_us": theirs,
                        "gap": gap,
                        "do_bench_sm_mhz": theirs_mhz,
                        "paced_us": paced,
                        "paced_sm_mhz": paced_mhz,
                    }
                )
                del data
        torch.cuda.empty_cache()
    report.figures["b_do_bench"] = figures
    report.table(
        "b) harness median (run 1) vs triton do_bench median",
        [
            "problem",
            "shape",
            "harness us",
            "do_bench us",
            "gap",
            "do_bench SM MHz",
            "paced us (same input)",
            "paced SM MHz",
            "note",
        ],
        rows,
    )
    report.note(
        "Both flush L2 before every call. do_bench queues calls back to back; the harness (and the "
        "'paced' column: the harness timer on do_bench's one input, synchronising around every call) "
        "leaves the GPU idle between calls. The SM clock columns show whether sustained load lowered it."
    )


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


def graph_timing(report: Report, evaluator: Evaluator) -> None:
    """Section e."""
    import torch

    from harness.graph_timing import copy_into, graph_replay_us

    problem = load_problem(PROBLEMS / "vectoradd")
    specs = [TINY_SPEC, min(problem.task.benchmarks, key=lambda spec: spec["size"])]
    solution = plain_solution("vectoradd")
    tiny = dataclasses.replace(problem, task=dataclasses.replace(problem.task, benchmarks=specs))
    events = evaluator.evaluate(tiny, solution, Mode.BENCHMARK).result
    event_median = {_spec(s.spec): s for s in events.shapes}
    seeds = itertools.count(90_001)
    rows, figures = [], []
    with problem_modules("vectoradd") as reference:

        def measure(kernel: Callable[[Any], Any], spec: dict[str, Any]) -> Any:
            def fresh() -> Any:
                with torch.device("cuda"):
                    return reference.generate_input(**{**spec, "seed": next(seeds)})

            return graph_replay_us(
                kernel, fresh(), refill=lambda static: copy_into(static, fresh()), check=reference.check_implementation
            )

        kernel = load_kernel(solution)
        for spec in specs:
            timing = measure(kernel, spec)
            stats = event_median.get(_spec(spec))
            row = {
                "spec": spec,
                "event_median_us": stats.median_us if stats else None,
                "harness_graph_us": stats.graph_us if stats else None,
                "graph_us": timing.per_call_us if timing else None,
                "checked": timing.checked if timing else None,
                "replays": timing.replays if timing else None,
            }
            figures.append(row)
            rows.append(
                [
                    solution.name,
                    _spec(spec),
                    row["event_median_us"],
                    row["graph_us"],
                    row["checked"],
                    row["replays"],
                    row["harness_graph_us"],
                    "" if timing and timing.checked else "CHECK",
                ]
            )

        def syncing(data: Any) -> Any:
            torch.cuda.synchronize()  # not allowed while a graph is captured: graph timing must decline
            return kernel(data)

        remembered: list[Any] = []

        def stale(data: Any) -> Any:
            if not remembered:  # computes once (the warm-up), then returns the same tensor
                remembered.append(kernel(data))
            return remembered[0]

        for name, control, wanted in (("syncing kernel", syncing, "None"), ("stale output", stale, "checked=False")):
            timing = measure(control, TINY_SPEC)
            got = "None" if timing is None else f"checked={timing.checked}"
            if got != wanted:
                report.mismatches.append(f"e) {name}")
            figures.append({"control": name, "expected": wanted, "got": got})
            rows.append(
                [
                    name,
                    _spec(TINY_SPEC),
                    None,
                    timing.per_call_us if timing else None,
                    got,
                    None,
                    None,
                    "" if got == wanted else "CHECK",
                ]
            )
    report.figures["e_graph"] = figures
    report.table(
        "e) vectoradd: event-timed median (harness) vs graph replay per call (cold L2, flush subtracted)",
        ["kernel", "shape", "event median us", "graph us", "checked", "replays", "harness graph_us", ""],
        rows,
    )


def _spec(spec: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in spec.items() if k != "seed")


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
            report.run_section("b) do_bench", lambda: versus_do_bench(report, evaluations))
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
