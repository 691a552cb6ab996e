"""The four evaluation modes, run inside the worker once the submission is imported.

test       every test spec once; a per-test verdict with the checker's message
benchmark  every benchmark shape checked once (the gate, before any timing), then per shape: warm-up
           (>= 5 calls and >= 50 ms, outputs checked) and the timed loop (the first sample and a random
           quarter of the rest checked)
ranked     the tests, then the same as benchmark on secret-seeded inputs, with every timed output checked
profile    every benchmark shape checked once, then the torch profiler's top kernels

Every call gets a never-seen input made outside the timed interval; the last few stay alive so their
addresses are not handed out again. Tiny CUDA shapes also get a graph-replay time (``harness.graph_timing``).
Raw timings go to the supervisor, which computes the statistics outside this process. Procedure:
``docs/timing.md``.
"""

from __future__ import annotations

import itertools
import random
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from harness import checking
from harness.channel import Outbox
from harness.device import sm_clock_mhz
from harness.failures import Verdict, checker_failure, describe, kernel_failure, summary, user_traceback
from harness.graph_timing import GRAPH_THRESHOLD_US, GraphTiming, copy_into, graph_replay_us
from harness.guard import Guard
from harness.problem import TaskSpec
from harness.result import FailureKind, Mode
from harness.seeds import SeedPlan
from harness.stats import StopRule
from harness.timing import CallTiming, Timer, calibrate_sync_gap, warm_up_device

WARMUP_CALLS = 5
WARMUP_S = 0.05
CHECK_FRACTION = 0.25          # benchmark mode: share of timed calls checked after the first
KEEP_ALIVE = 3                 # inputs kept alive: the current one and the previous two
PROFILE_CALLS = 3
PROFILE_ROWS = 15
# A failed test does not stop the others, unless the process may be in a broken state.
_RECOVERABLE = frozenset({FailureKind.EXCEPTION, FailureKind.WRONG_OUTPUT, FailureKind.BAD_OUTPUT_TYPE})

_clock = time.perf_counter
_on_device = torch.device


@dataclass
class Reference:
    """The problem's functions, bound before the submission is imported."""

    generate_input: Callable[..., Any]
    ref_kernel: Callable[[Any], Any]
    check: Callable[[Any, Any], Any]


@dataclass
class Context:
    task: TaskSpec
    device: str
    timer: Timer
    reference: Reference
    kernel: Callable[[Any], Any]
    guard: Guard
    outbox: Outbox
    seeds: SeedPlan


def run(mode: Mode, ctx: Context) -> None:
    {Mode.TEST: run_tests, Mode.BENCHMARK: run_benchmark, Mode.RANKED: run_ranked,
     Mode.PROFILE: run_profile}[mode](ctx)


def run_tests(ctx: Context) -> None:
    tests = ctx.task.tests
    failed: list[Verdict] = []
    for index, spec in enumerate(tests, 1):
        ctx.outbox.progress("testing", index, len(tests), describe(spec))
        try:
            _checked_call(ctx, spec, call=0, during=f"test {index} of {len(tests)} ({describe(spec)})")
        except Verdict as verdict:
            if verdict.failure.kind not in _RECOVERABLE:
                raise
            failed.append(verdict)
            ctx.outbox.send("test", result={"spec": spec, "passed": False, "message": verdict.failure.message})
        else:
            ctx.outbox.send("test", result={"spec": spec, "passed": True, "message": ""})
    if failed:
        first = failed[0].failure
        raise Verdict(first.kind, f"{len(failed)} of {len(tests)} tests failed. The first: {first.message}",
                      first.log_tail)


def run_benchmark(ctx: Context) -> None:
    _time_shapes(ctx, check_all=False)


def run_ranked(ctx: Context) -> None:
    run_tests(ctx)
    _time_shapes(ctx, check_all=True)


def run_profile(ctx: Context) -> None:
    shapes = ctx.task.benchmarks_for(ctx.device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ctx.device == "cuda" else [])
    sort_by = "self_device_time_total" if ctx.device == "cuda" else "self_cpu_time_total"
    for index, spec in enumerate(shapes, 1):
        ctx.outbox.progress("profiling", index, len(shapes), describe(spec))
        during = _on_shape(index, len(shapes), spec)
        expectation, _ = _checked_call(ctx, spec, call=0, during=during)
        calls = [_fresh_input(ctx, spec, call, during) for call in range(1, PROFILE_CALLS + 1)]
        with profile(activities=activities) as profiler:
            outputs = [_call(ctx, data, timed=False, during=during)[0] for data, _ in calls]
        for (data, pristine), output in zip(calls, outputs, strict=True):
            _verify(ctx, expectation, pristine, data, output, during)
        table = profiler.key_averages().table(sort_by=sort_by, row_limit=PROFILE_ROWS)
        ctx.outbox.send("profile", entry={"spec": spec, "table": table})


def _time_shapes(ctx: Context, check_all: bool) -> None:
    shapes = ctx.task.benchmarks_for(ctx.device)
    # the correctness gate: every shape checked once before any is timed; that first call's time is kept
    first_calls = [_checked_call(ctx, spec, call=0, during=_on_shape(index, len(shapes), spec), timed=True)
                   for index, spec in enumerate(shapes, 1)]
    warm_up_device(ctx.timer)
    ctx.outbox.send("calibration", baseline_gap_us=calibrate_sync_gap(ctx.timer))
    for index, (spec, (expectation, first_call)) in enumerate(zip(shapes, first_calls, strict=True), 1):
        _time_shape(ctx, spec, index, len(shapes), expectation, first_call.event_us, check_all)


def _on_shape(index: int, total: int, spec: dict[str, Any]) -> str:
    return f"benchmark shape {index} of {total} ({describe(spec)})"


def _time_shape(ctx: Context, spec: dict[str, Any], index: int, total: int, expectation: checking.Expectation,
                first_call_us: float, check_all: bool) -> None:
    """Warm up, then time one shape until the stop rule says enough; send the raw samples."""
    during = _on_shape(index, total, spec)
    alive: deque[tuple[Any, ...]] = deque(maxlen=KEEP_ALIVE)
    call = 1                   # call 0 was the correctness gate's
    ctx.outbox.progress("warming", index, total, describe(spec))
    warm_calls, started = 0, _clock()
    while warm_calls < WARMUP_CALLS or _clock() - started < WARMUP_S:
        data, pristine = _fresh_input(ctx, spec, call, during)
        output, _, _ = _call(ctx, data, timed=True, during=during)
        _verify(ctx, expectation, pristine, data, output, during)
        alive.append((data, pristine, output))
        call, warm_calls = call + 1, warm_calls + 1

    ctx.outbox.progress("timing", index, total, describe(spec))
    rule = StopRule(budget_s=ctx.task.shape_budget_ms / 1000)
    chooser = random.SystemRandom()     # which calls get checked is drawn after each call, unpredictably
    samples_us: list[float] = []
    sync_gaps_us: list[float] = []
    loop_s, started = 0.0, _clock()
    while True:
        data, pristine = _fresh_input(ctx, spec, call, during)
        output, timing, seconds = _call(ctx, data, timed=True, during=during)
        loop_s += seconds
        if check_all or not samples_us or chooser.random() < CHECK_FRACTION:
            _verify(ctx, expectation, pristine, data, output, during)
        samples_us.append(timing.event_us)
        sync_gaps_us.append(timing.sync_us - timing.event_us)
        alive.append((data, pristine, output))
        call += 1
        if stop_reason := rule.decide(samples_us, loop_s, _clock() - started):
            break
    graph = None
    if ctx.device == "cuda" and statistics.median(samples_us) < GRAPH_THRESHOLD_US:
        graph = _graph_time(ctx, spec, data, call, during)
    ctx.outbox.send("shape", spec=spec, samples_us=samples_us, first_call_us=first_call_us,
                    sync_gaps_us=sync_gaps_us, stop_reason=stop_reason,
                    graph_us=graph.per_call_us if graph else None, graph_checked=graph.checked if graph else None,
                    sm_clock_mhz=sm_clock_mhz() if ctx.device == "cuda" else None)


def _graph_time(ctx: Context, spec: dict[str, Any], template: Any, next_call: int,
                during: str) -> GraphTiming | None:
    """Graph-replay time of a tiny shape, on inputs no earlier call has seen."""
    calls = itertools.count(next_call)
    timing = graph_replay_us(
        ctx.kernel, template,
        refill=lambda static: copy_into(static, _fresh_input(ctx, spec, next(calls), during)[0]),
        check=lambda pristine, output: checking.run_checker(ctx.reference.check, pristine, output))
    _check_untampered(ctx, during)
    return timing


def _checked_call(ctx: Context, spec: dict[str, Any], call: int, during: str,
                  timed: bool = False) -> tuple[checking.Expectation, CallTiming]:
    """One checked call on a fresh input; returns what the reference does with this shape, and the timing."""
    data, pristine = _fresh_input(ctx, spec, call, during)
    expectation = _expect(ctx, data, during)
    output, timing, _ = _call(ctx, data, timed=timed, during=during)
    _verify(ctx, expectation, pristine, data, output, during)
    return expectation, timing


def _fresh_input(ctx: Context, spec: dict[str, Any], call: int, during: str) -> tuple[Any, Any]:
    """A never-seen input for call number ``call`` of a shape, and a pristine copy for the checker."""
    try:
        with _on_device(ctx.device):
            data = ctx.reference.generate_input(**ctx.seeds.spec_for(spec, call))
        return data, checking.clone_data(data)
    except Exception as exc:
        raise _problem_failure(exc, "generate_input", during) from None


def _expect(ctx: Context, data: Any, during: str) -> checking.Expectation:
    try:
        return checking.expect(ctx.reference.ref_kernel, data)
    except Exception as exc:
        raise _problem_failure(exc, "ref_kernel", during) from None


def _call(ctx: Context, data: Any, timed: bool, during: str) -> tuple[Any, CallTiming, float]:
    """Call the submission once (timed or not); returns its output, the timing and host seconds spent."""
    kernel = ctx.kernel
    started = _clock()
    try:
        if timed:
            output, timing = ctx.timer.time_call(lambda: kernel(data))
        else:
            output, timing = ctx.timer.untimed(lambda: kernel(data)), CallTiming(0.0, 0.0)
    except BaseException as exc:      # SystemExit and KeyboardInterrupt from a submission are its failures too
        raise kernel_failure(exc, during) from None
    seconds = _clock() - started
    _check_untampered(ctx, during)
    return output, timing, seconds


def _check_untampered(ctx: Context, during: str) -> None:
    if replaced := ctx.guard.tampered():
        raise Verdict(FailureKind.TAMPERING,
                      f"The submission replaced {', '.join(replaced[:5])} during {during}. The timer, the checker "
                      "and the harness are off limits: a submission may only compute its output.")


def _verify(ctx: Context, expectation: checking.Expectation, pristine: Any, data: Any, output: Any,
            during: str) -> None:
    if fault := checking.structural_fault(expectation, pristine, data, output):
        raise Verdict(fault.kind, f"Wrong output on {during}: {fault.message}")
    try:
        ok, message = checking.run_checker(ctx.reference.check, pristine, output)
    except Exception as exc:
        raise checker_failure(exc, during) from None
    if not ok:
        raise Verdict(FailureKind.WRONG_OUTPUT, f"Wrong output on {during}: {message}")


def _problem_failure(exc: Exception, function: str, during: str) -> Verdict:
    """The problem's own code failed: after a submission's CUDA fault, or a broken problem."""
    if (verdict := kernel_failure(exc, during)).failure.kind is not FailureKind.EXCEPTION:
        return verdict
    return Verdict(FailureKind.INVALID_PROBLEM,
                   f"The problem's {function} failed during {during} ({summary(exc)}). This is a fault of the "
                   "problem, not of your submission; tell the leaderboard's maintainers.", user_traceback(exc))
