"""What the judge's modes see of the submission's side: one call's answer, and the runner as a protocol.

``harness.judge.runner_link.RunnerLink`` is the one implementation: the runner as a process of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from harness.judge import brackets
from harness.timing import CallTiming


@dataclass
class Answer:
    """One call as the judge holds it: copies in the judge's memory, the runner's report, the bracket."""

    output: Any
    inputs: Any  # the inputs as the call left them (in-place writes show here)
    timing: CallTiming
    bracket_us: float  # the judge's clock from before the inputs reached the runner to the whole answer (and, on
    # CUDA, the runner's work done)
    spent_us: float  # what the call cost as the judge sees it (harness.judge.brackets.spent)
    payload_bytes: int  # bytes the call really moved through the socket in the bracket (inputs sent, answer's extents)
    address: int  # where the runner's output lived (diagnostic)
    reaped_us: float = 0.0  # of spent_us: what processes reaped during the call left their parents, in clock ticks


class Runner(Protocol):
    """What the modes need of the submission's side, a process of its own (``RunnerLink``)."""

    rebuild_us: Callable[[Any], float] | None

    def start(self, device: str) -> None: ...
    def import_submission(self) -> None: ...
    def calibrate(self, calls: int = ...) -> brackets.Allowance: ...
    def call(self, data: Any, timed: bool, host: bool, during: str, calibration: bool = False) -> Answer: ...
    def busy(self, seconds: float) -> None: ...
    def profile(self, calls: list[Callable[[], Any]], rows: int) -> str: ...
    def compile_seconds(self) -> float: ...
    def close(self) -> None: ...
