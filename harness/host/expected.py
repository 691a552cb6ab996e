"""What a run of each mode must do: the calls it is handed seeds for, and the records it must report before
its verdict counts."""

from __future__ import annotations

from typing import Any

from harness.host.assembly import Ending
from harness.job import EvalJob
from harness.result import Failure, FailureKind, Mode

_TIMED_MODES = (Mode.BENCHMARK, Mode.RANKED, Mode.PROFILE)


def first_calls(job: EvalJob) -> list[dict[str, Any]]:
    """Every spec whose call 0 the mode makes, as often as it makes it: once per test, then once per benchmark
    shape (the worker picks the device, so a shape counts as often as either device's list holds it)."""
    task = job.problem.task
    calls = list(task.tests) if job.mode in (Mode.TEST, Mode.RANKED) else []
    if job.mode in _TIMED_MODES:
        lists = (task.benchmarks_for("cpu"), task.benchmarks_for("cuda"))
        for spec in [s for i, s in enumerate(lists[0] + lists[1]) if s not in (lists[0] + lists[1])[:i]]:
            calls += [spec] * max(specs.count(spec) for specs in lists)
    return calls


def check_complete(job: EvalJob, ending: Ending) -> None:
    """A run that says it finished without a failure must have reported every test and every shape (C10: a
    forged early "final" record would otherwise pass with nothing checked)."""
    if ending.stopped_for is not None or not ending.final or any(r.get("t") == "failure" for r in ending.records):
        return
    kinds = [r.get("t") for r in ending.records]
    system = next((r for r in ending.records if r.get("t") == "system"), None)
    device = (system or {}).get("system", {}).get("device", "")
    task = job.problem.task
    wanted = {
        "test": len(task.tests) if job.mode in (Mode.TEST, Mode.RANKED) else 0,
        "shape": len(task.benchmarks_for(device)) if job.mode in (Mode.BENCHMARK, Mode.RANKED) else 0,
        "profile": len(task.benchmarks_for(device)) if job.mode is Mode.PROFILE else 0,
    }
    if system is None or any(kinds.count(kind) != count for kind, count in wanted.items()):
        ending.stopped_for = Failure(
            FailureKind.TAMPERING,
            "The evaluation ended without reporting every test and "
            "benchmark shape, so it has no verdict. A submission must not end the run early "
            "or write to the harness's channel.",
        )
