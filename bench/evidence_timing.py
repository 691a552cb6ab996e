"""The GPU evidence sections that time kernels in this process, beside the harness's own figures.

Section b (``versus_do_bench``) times the noise section's plain solutions with ``triton.testing.do_bench``
and with the harness's timer on one input, sampling the SM clock meanwhile; section e (``graph_timing``)
replays vectoradd in a CUDA graph (``harness.judge.graph_timing``) beside its event-timed medians, plus two kernels
graph timing must decline or flag. Both need a CUDA GPU; ``gpu_evidence`` runs them only there.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import statistics
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout, no install needed

from evidence_jobs import PROBLEMS, Evaluation, Evaluator, load_kernel, plain_solution, problem_modules  # noqa: E402
from evidence_report import Report, percent, shape_label  # noqa: E402

from harness import Mode, load_problem  # noqa: E402

GAP_NOTE = 0.05  # harness vs do_bench gaps above this are marked
TINY_SPEC = {"size": 1024, "seed": 7001}  # a vectoradd shape whose event time is mostly fixed cost


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


def versus_do_bench(report: Report, evaluations: dict[str, list[Evaluation]], names: Iterable[str]) -> None:
    """Section b on the problems ``names``, with the SM clock sampled during each measurement to explain any gap."""
    import torch
    from triton.testing import do_bench

    from harness.timing import make_timer

    timer = make_timer("cuda")
    rows, figures = [], []
    for name in names:
        shapes = evaluations[name][0].result.shapes if name in evaluations else []
        harness_median = {shape_label(s.spec): s.median_us for s in shapes}
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
                ours = harness_median.get(shape_label(spec))
                gap = ours / theirs - 1 if ours is not None else None
                mark = "gap > 5 %" if gap is not None and abs(gap) > GAP_NOTE else ""
                rows.append([name, shape_label(spec), ours, theirs, percent(gap), theirs_mhz, paced, paced_mhz, mark])
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


def graph_timing(report: Report, evaluator: Evaluator) -> None:
    """Section e."""
    import torch

    from harness.judge.graph_timing import copy_into, graph_replay_us

    problem = load_problem(PROBLEMS / "vectoradd")
    specs = [TINY_SPEC, min(problem.task.benchmarks, key=lambda spec: spec["size"])]
    solution = plain_solution("vectoradd")
    tiny = dataclasses.replace(problem, task=dataclasses.replace(problem.task, benchmarks=specs))
    events = evaluator.evaluate(tiny, solution, Mode.BENCHMARK).result
    event_median = {shape_label(s.spec): s for s in events.shapes}
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
            stats = event_median.get(shape_label(spec))
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
                    shape_label(spec),
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
                    shape_label(TINY_SPEC),
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
