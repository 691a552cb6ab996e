"""The runner of ``lang: cu`` problems, inside the judge's own process (not yet behind the boundary).

A CUDA problem's built module joins the problem's reference, its checker and the submission in one library
(``harness.runner.cu_module``), and its inputs are C++ objects that cannot be handed to another process. Until the
reference and the submission are built apart, such an evaluation keeps the single-process arrangement the
harness had before the judge/runner split: the timer and the guard are bound before the module is loaded,
every call is watched by the call monitor, and the same ``Answer`` comes back, with the judge's own clock as
its bracket. ``docs/integrity.md`` lists what this leaves open.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from torch.profiler import ProfilerActivity, profile

from harness.failures import Verdict, kernel_failure
from harness.judge import brackets
from harness.judge.runner_link import CALIBRATION_CALLS, Answer
from harness.result import FailureKind
from harness.runner import runner_process
from harness.runner.cu_module import CuModule
from harness.runner.monitor import CallMonitor
from harness.timing import make_timer, run_call

_clock_ns = time.perf_counter_ns
ReferenceFunctions = tuple[Callable[..., Any], Callable[[Any], Any], Callable[[Any, Any], tuple[bool, str]]]


class InProcessRunner:
    def __init__(self, submission_file: str) -> None:
        self.file = submission_file
        self.kernel: Callable[[Any], Any] = _nothing

    def start(self, device: str) -> None:
        self.device = device
        self.timer = make_timer(device)
        self.monitor = CallMonitor(str(Path.cwd() / self.file), device)
        self.timer.watch(self.monitor.watch)
        self.guard = runner_process.guard_for(self.timer)
        self.monitor.install(self.guard)

    @contextlib.contextmanager
    def watch(self) -> Iterator[None]:
        with self.monitor.watch():
            yield

    def load_cu(self, path: Path) -> ReferenceFunctions:
        """The built module's problem functions; its custom_kernel becomes this runner's kernel."""
        try:
            with self.monitor.watch():  # loading runs the submission's static initialisers
                module = CuModule(path)
        except OSError as exc:
            raise Verdict(
                FailureKind.IMPORT_ERROR,
                f"The compiled submission could not be loaded ({exc}). Check "
                "that it defines custom_kernel for the problem's input_t and output_t.",
            ) from None
        generate_input, ref_kernel, check, self.kernel = module.functions()
        runner_process.check_untampered(self.guard, "loading the submission")
        return generate_input, ref_kernel, check

    def calibrate(self, calls: int = CALIBRATION_CALLS) -> brackets.Allowance:
        empty = [
            self.call(None, timed=True, host=False, during="the calibration", calibration=True) for _ in range(calls)
        ]
        return brackets.allowance(
            [a.spent_us for a in empty], [a.timing.sync_us - a.timing.event_us for a in empty], self.device
        )

    def call(self, data: Any, timed: bool, host: bool, during: str, calibration: bool = False) -> Answer:
        kernel = _nothing if calibration else self.kernel
        started = _clock_ns()
        try:
            output, timing = run_call(self.timer, lambda: kernel(data), timed, host)
        except BaseException as exc:
            raise kernel_failure(exc, during) from None
        bracket_us = (_clock_ns() - started) / 1000
        runner_process.check_untampered(self.guard, during)
        return Answer(output, data, timing, bracket_us, bracket_us, 0, 0)

    def busy(self, seconds: float) -> None:
        self.timer.busy(seconds)

    def profile(self, calls: list[Callable[[], Any]], rows: int) -> str:
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device == "cuda" else [])
        with profile(activities=activities) as profiler:
            for call in calls:
                call()
        sort_by = "self_device_time_total" if self.device == "cuda" else "self_cpu_time_total"
        return profiler.key_averages().table(sort_by=sort_by, row_limit=rows)

    def compile_seconds(self) -> float:
        return 0.0  # the module was built before the evaluation (harness.builds.builder)

    def import_submission(self) -> None:
        """Nothing to do: ``load_cu`` loaded it."""

    def close(self) -> None:
        """Nothing to end: the submission lives in this process."""


def _nothing(data: Any) -> None:
    return None
