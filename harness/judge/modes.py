"""The four evaluation modes, run by the judge once the runner has imported the submission.

test       every test spec once; a per-test verdict with the checker's message
benchmark  every benchmark shape checked once (the gate, before any timing), then per shape: warm-up
           (>= 5 calls and >= 30 ms, timed for the record, not checked) and the timed loop (the first
           sample and a random quarter of the rest checked)
ranked     the tests, then the same as benchmark on secret-seeded inputs, with every timed output checked
profile    every benchmark shape checked once, then the torch profiler's top kernels over a few more
           calls (not checked: the table must show the submission's work only)

Every call gets a never-seen input made by the judge outside the timed interval and run in the runner
(``harness.judge.runner_link``); the last few stay alive so their addresses are not handed out again. A checked
output is judged in the judge's own memory right after its call. Every reported time must fit the judge's
bracket, and each shape's times must account for the brackets (``harness.judge.brackets``). Raw timings go to
the supervisor, which computes the statistics outside this process. Procedure: ``docs/timing.md``; what a
check may reject: ``harness.judge.checking``.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import random
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from harness.channel import Outbox
from harness.codec import to_jsonable
from harness.failures import Verdict, checker_failure, describe, problem_failure, rejected
from harness.judge import brackets, checking, ncu, profiling
from harness.judge.runner_api import Answer, Runner
from harness.problem import TaskSpec
from harness.result import FailureKind, Mode
from harness.seeds import SeedPlan
from harness.stats import StopRule, ci_target
from harness.timing import CallTiming

WARMUP_CALLS = 5
WARMUP_S = 0.03
CHECK_FRACTION = 0.25  # benchmark mode: share of timed calls checked after the first
KEEP_ALIVE = 3  # inputs kept alive: the current one and the previous two
WARM_UP_S = 0.2  # CUDA: busy work that lifts the clocks out of idle before anything is timed
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
    check: checking.Check  # (pristine input, output) -> (ok, message); may raise


@dataclass
class Phases:
    """Seconds of wall time per phase of the evaluation, for the result's ``phases_s``."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = _clock()
        try:
            yield
        finally:
            self.add(name, _clock() - started)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds


@dataclass
class Context:
    task: TaskSpec
    device: str
    reference: Reference
    runner: Runner  # the submission's process: every call of custom_kernel goes there
    allowance: brackets.Allowance  # what an empty call costs as the judge saw it, before the submission existed
    outbox: Outbox
    seeds: SeedPlan
    phases: Phases = field(default_factory=Phases)
    files: dict[str, bytes] = field(default_factory=dict)  # problem files and submission, for ncu's own process
    submission: str = ""


def run(mode: Mode, ctx: Context) -> None:
    {Mode.TEST: run_tests, Mode.BENCHMARK: run_benchmark, Mode.RANKED: run_ranked, Mode.PROFILE: run_profile}[mode](ctx)


def run_tests(ctx: Context) -> None:
    tests = ctx.task.tests
    failed: list[Verdict] = []
    with ctx.phases("tests"):
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
        raise Verdict(
            first.kind, f"{len(failed)} of {len(tests)} tests failed. The first: {first.message}", first.log_tail
        )


def run_benchmark(ctx: Context) -> None:
    _time_shapes(ctx, check_all=False)


def run_ranked(ctx: Context) -> None:
    run_tests(ctx)
    _time_shapes(ctx, check_all=True)


def run_profile(ctx: Context) -> None:
    """ncu per shape where it can read the GPU's counters, else torch's profiler with the reason."""
    shapes = ctx.task.benchmarks_for(ctx.device)
    why_not_ncu = ncu.unavailable_reason() if ctx.device == "cuda" else "ncu profiles CUDA evaluations only"
    for index, spec in enumerate(shapes, 1):
        ctx.outbox.progress("profiling", index, len(shapes), describe(spec))
        during = _on_shape(index, len(shapes), spec)
        with ctx.phases("gate"):
            _checked_call(ctx, spec, call=0, during=during)
        with ctx.phases("profile"):
            if why_not_ncu is None:
                settings = {
                    "lang": ctx.task.lang,
                    "submission": ctx.submission,
                    "default_device": ctx.task.default_device,
                    "first_format": ctx.task.checker_args != "data, output",
                }
                public = ctx.seeds.spec_for(spec, PROFILE_CALLS + 1)
                entry = profiling.profile_shape(ctx.files, settings, public, index)
                if not isinstance(entry, str):
                    ctx.outbox.send("profile", entry=to_jsonable(entry))
                    continue
                why_not_ncu = entry
            inputs = [_fresh_input(ctx, spec, call, during)[0] for call in range(1, PROFILE_CALLS + 1)]
            table = ctx.runner.profile(
                [functools.partial(_call, ctx, data, False, during) for data in inputs], PROFILE_ROWS
            )
        ctx.outbox.send("profile", entry={"spec": spec, "table": table, "note": f"no ncu summary: {why_not_ncu}"})


def _time_shapes(ctx: Context, check_all: bool) -> None:
    shapes = ctx.task.benchmarks_for(ctx.device)
    # the correctness gate: every shape checked once before any is timed; that first call's time is kept
    with ctx.phases("gate"):
        first_calls = [
            _checked_call(ctx, spec, call=0, during=_on_shape(index, len(shapes), spec), timed=True)
            for index, spec in enumerate(shapes, 1)
        ]
    with ctx.phases("warm-up"):
        if ctx.device == "cuda":
            ctx.runner.busy(WARM_UP_S)
    # the side-stream baseline: empty calls before the submission existed, never calls it could recognise now
    ctx.outbox.send("calibration", baseline_gap_us=ctx.allowance.baseline_gap_us)
    for index, (spec, (expectation, first_call)) in enumerate(zip(shapes, first_calls, strict=True), 1):
        target = ci_target(ctx.task.ranking_by, len(shapes), index - 1)
        _time_shape(ctx, spec, index, len(shapes), expectation, first_call.event_us, check_all, target)


def _on_shape(index: int, total: int, spec: dict[str, Any]) -> str:
    return f"benchmark shape {index} of {total} ({describe(spec)})"


def _time_shape(
    ctx: Context,
    spec: dict[str, Any],
    index: int,
    total: int,
    expectation: checking.Expectation,
    first_call_us: float,
    check_all: bool,
    ci_half_width: float,
) -> None:
    """Warm up, then time one shape until the stop rule says enough; send the raw samples."""
    during = _on_shape(index, total, spec)
    alive: deque[tuple[Any, ...]] = deque(maxlen=KEEP_ALIVE)
    calls = itertools.count(1)  # call 0 was the correctness gate's
    ctx.outbox.progress("warming", index, total, describe(spec))
    warmup_us: list[float] = []
    with ctx.phases("warm-up"):
        started = _clock()
        while len(warmup_us) < WARMUP_CALLS or _clock() - started < WARMUP_S:
            data, pristine = _fresh_input(ctx, spec, next(calls), during)
            answer = _call(ctx, data, timed=True, during=during, host=expectation.on_host)
            warmup_us.append(answer.timing.event_us)
            alive.append((data, pristine, answer))

    ctx.outbox.progress("timing", index, total, describe(spec))
    rule = StopRule(ci_half_width=ci_half_width, budget_s=ctx.task.shape_budget_ms / 1000)
    chooser = random.SystemRandom()  # which calls get checked is drawn after each call, unpredictably
    samples_us: list[float] = []
    sync_gaps_us: list[float] = []
    clocks_mhz: list[float] = []
    flushes_us: list[float] = []
    hosts_us: list[float] = []
    addresses: list[int] = []
    spent_us: list[float] = []
    reaped_us: list[float] = []
    payloads: list[int] = []
    started = _clock()
    while True:
        with ctx.phases("timing: inputs"):
            data, pristine = _fresh_input(ctx, spec, next(calls), during)
        with ctx.phases("timing: calls"):
            answer = _call(ctx, data, timed=True, during=during, host=expectation.on_host)
        if check_all or not samples_us or chooser.random() < CHECK_FRACTION:
            with ctx.phases("timing: checks"):
                _verify(ctx, expectation, pristine, answer.inputs, answer.output, during)
        timing = answer.timing
        samples_us.append(timing.event_us)
        spent_us.append(answer.spent_us)
        reaped_us.append(answer.reaped_us)
        payloads.append(answer.payload_bytes)
        sync_gaps_us.append(timing.sync_us - timing.event_us)
        clocks_mhz.append(timing.clock_mhz)
        flushes_us.append(timing.flush_us)
        hosts_us.append(timing.host_us)
        addresses.append(answer.address)
        alive.append((data, pristine, answer))
        if stop_reason := rule.decide(samples_us, _clock() - started):
            break
    ctx.phases.add("timing", _clock() - started)
    if why := brackets.unaccounted(samples_us, spent_us, payloads, ctx.allowance, reaped_us, brackets.shape_key(spec)):
        raise Verdict(
            FailureKind.UNTRUSTED_TIME,
            f"The times reported for {during} are shorter than the work took: "
            f"{why}. The submission's process must not report before its work is done.",
        )
    ctx.outbox.send(
        "shape",
        spec=spec,
        samples_us=samples_us,
        first_call_us=first_call_us,
        sync_gaps_us=sync_gaps_us,
        stop_reason=stop_reason,
        graph_us=None,
        graph_checked=None,
        warmup_us=warmup_us,
        clocks_mhz=clocks_mhz if ctx.device == "cuda" else [],
        flushes_us=flushes_us if ctx.device == "cuda" else [],
        hosts_us=hosts_us,
        addresses=addresses,
    )


def _checked_call(
    ctx: Context, spec: dict[str, Any], call: int, during: str, timed: bool = False
) -> tuple[checking.Expectation, CallTiming]:
    """One checked call on a fresh input; returns what the reference does with this shape, and the timing."""
    data, pristine = _fresh_input(ctx, spec, call, during)
    expectation = _expect(ctx, data, during)
    answer = _call(ctx, data, timed=timed, during=during, host=expectation.on_host)
    _verify(ctx, expectation, pristine, answer.inputs, answer.output, during)
    return expectation, answer.timing


def _fresh_input(ctx: Context, spec: dict[str, Any], call: int, during: str) -> tuple[Any, Any]:
    """A never-seen input for call number ``call`` of a shape, and a pristine copy for the checker.

    Only problems that declare ``devices`` get the evaluation's device as torch's default device here;
    others run exactly as written (their inputs may live on the host).
    """
    try:
        with _on_device(ctx.device) if ctx.task.default_device else contextlib.nullcontext():
            data = ctx.reference.generate_input(**ctx.seeds.spec_for(spec, call))
        return data, checking.clone_data(data)
    except Exception as exc:
        raise problem_failure(exc, "generate_input", during, ctx.device) from None


def _expect(ctx: Context, data: Any, during: str) -> checking.Expectation:
    try:
        return checking.expect(ctx.reference.ref_kernel, data)
    except Exception as exc:
        raise problem_failure(exc, "ref_kernel", during, ctx.device) from None


def _call(ctx: Context, data: Any, timed: bool, during: str, host: bool = False) -> Answer:
    """One call of the submission in the runner (timed or not), its answer copied into the judge's memory.

    ``host``: the reference's output lives on the host, so the runner times the call with the host's clock.
    A timed call's reported time must fit inside the judge's bracket (``harness.judge.brackets``).
    """
    answer = ctx.runner.call(data, timed=timed, host=host, during=during)
    if timed and (why := brackets.outside(answer.timing.event_us, answer.bracket_us)):
        raise Verdict(
            FailureKind.UNTRUSTED_TIME,
            f"The time reported for {during} cannot be true: {why}. Times come "
            "from the harness's timer; a submission must not report times of its own.",
        )
    return answer


def _verify(
    ctx: Context, expectation: checking.Expectation, pristine: Any, data: Any, output: Any, during: str
) -> None:
    """Judge one call's output: the problem's checker, and the harness's named rules around it."""
    try:
        rejection = checking.judge(
            expectation,
            pristine,
            data,
            output,
            ctx.reference.check,
            ctx.reference.ref_kernel,
            ctx.task.strict_output,
            ctx.task.output_may_alias_input,
        )
    except Verdict:
        raise
    except Exception as exc:  # the checker (or the reference confirming a NaN) raised
        raise checker_failure(exc, during) from None
    if rejection is not None:
        raise rejected(rejection, during)
