"""A long call says so, and each phase of an evaluation has its own limit from the problem's task.yml.

The supervisor (and ``harness.host.author_eval``) asks a ``Liveness`` on every turn of its watch loop. Phases:
a test run is bounded by ``test_timeout``; a benchmark or profile run by ``benchmark_timeout``; a ranked
run's tests by ``test_timeout`` and, from its first timed call on, its timing by ``ranked_timeout``. While
nothing new is reported, a progress event repeats where the run is, with "still running after N s; limit
L s", every ``KERNELRANK_PROGRESS_EVERY_S`` seconds (15 by default, never more).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.problem import TaskSpec
from harness.result import Failure, FailureKind, Mode

PROGRESS_EVERY_S = 15.0
TIMED_STAGES = ("warming", "timing", "profiling")
_LIMIT_KEYS = {
    "test": "test_timeout",
    "benchmark": "benchmark_timeout",
    "ranked": "ranked_timeout",
    "profile": "benchmark_timeout",
}


def progress_every_s() -> float:
    """Seconds between "still running" reports: the environment's setting, at most 15 s."""
    try:
        value = float(os.environ.get("KERNELRANK_PROGRESS_EVERY_S", PROGRESS_EVERY_S))
    except ValueError:
        value = PROGRESS_EVERY_S
    return min(PROGRESS_EVERY_S, value) if value > 0 else PROGRESS_EVERY_S


@dataclass(frozen=True)
class Phase:
    name: str  # "test" | "benchmark" | "ranked" | "profile"
    limit_s: float

    @property
    def limit_key(self) -> str:
        return _LIMIT_KEYS[self.name]

    @classmethod
    def of(cls, task: TaskSpec, name: str) -> Phase:
        return cls(name, float(getattr(task, _LIMIT_KEYS[name])))


def first_phase(task: TaskSpec, mode: Mode) -> Phase:
    return Phase.of(task, "test" if mode in (Mode.TEST, Mode.RANKED) else mode.value)


def where(progress: dict[str, Any] | None) -> str:
    """What a run was doing last, for messages: "testing 2 of 4 (size=127, seed=1)"."""
    p = progress or {"stage": "starting"}
    counted = f" {p.get('index')} of {p.get('total')}" if p.get("total") else ""
    detail = f" ({p['detail']})" if p.get("detail") else ""
    return f"{p.get('stage')}{counted}{detail}"


def timeout_failure(phase: Phase, progress: dict[str, Any] | None) -> Failure:
    return Failure(
        FailureKind.TIMEOUT,
        f"The {phase.name} phase did not finish within its {phase.limit_s:g} s limit "
        f"(the problem's {phase.limit_key}) and was stopped while {where(progress)}. "
        "Look for an infinite loop, a deadlock or a kernel that never returns.",
    )


@dataclass
class Liveness:
    """Phase deadlines and "still running" reports for one watched process."""

    phase: Phase
    emit: Callable[[dict[str, Any]], None]
    next_phase: Phase | None = None  # a ranked run's timing, entered at its first timed stage
    every_s: float = field(default_factory=progress_every_s)
    started: float = field(default_factory=time.monotonic)
    progress: dict[str, Any] | None = None
    _quiet_since: float = field(default_factory=time.monotonic)

    def saw(self, progress: dict[str, Any]) -> None:
        """A progress event from the run: it is alive, and may have entered its next phase."""
        now = time.monotonic()
        self.progress, self._quiet_since = progress, now
        if self.next_phase is not None and progress.get("stage") in TIMED_STAGES:
            self.phase, self.next_phase, self.started = self.next_phase, None, now

    def check(self) -> Failure | None:
        """The timeout failure once the phase's limit is passed; else report a long quiet call when due."""
        now = time.monotonic()
        if now - self.started > self.phase.limit_s:
            return timeout_failure(self.phase, self.progress)
        if now - self._quiet_since >= self.every_s:
            self._quiet_since = now
            p = dict(self.progress or {"stage": "starting", "index": 0, "total": 0, "detail": ""})
            note = f"still running after {now - self.started:.0f} s; limit {self.phase.limit_s:g} s"
            p["detail"] = f"{p['detail']}; {note}" if p.get("detail") else note
            self.emit({"t": "progress", "progress": p})
        return None
