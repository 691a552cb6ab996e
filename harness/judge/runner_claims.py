"""What the judge takes from the runner's own words: a failure it reports about itself (only of a kind it may
claim) and the timing fields of a call (numbers only). Everything else it says is checked where it is used
(``harness.judge.runner_link``, ``harness.judge.brackets``)."""

from __future__ import annotations

from typing import Any

from harness.failures import Verdict
from harness.result import FailureKind
from harness.timing import CallTiming

# failure kinds a runner may report about itself; anything else it claims reads as an exception
RUNNER_KINDS = frozenset(
    {
        FailureKind.SYNTAX_ERROR,
        FailureKind.MISSING_ENTRY_POINT,
        FailureKind.IMPORT_ERROR,
        FailureKind.COMPILE_ERROR,
        FailureKind.EXCEPTION,
        FailureKind.BAD_OUTPUT_TYPE,
        FailureKind.CRASH,
        FailureKind.CUDA_ERROR,
        FailureKind.OUT_OF_MEMORY,
        FailureKind.ESCAPED_TIMING,
        FailureKind.TAMPERING,
        FailureKind.RESOURCE_LIMIT,
    }
)


def reported_failure(failure: Any) -> Verdict:
    """A failure the runner reports about itself: believed only as a failure, and only of a kind it may claim."""
    if not isinstance(failure, dict):
        failure = {}
    try:
        kind = FailureKind(failure.get("kind"))
    except ValueError:
        kind = FailureKind.EXCEPTION
    return Verdict(
        kind if kind in RUNNER_KINDS else FailureKind.EXCEPTION,
        str(failure.get("message", ""))[:4000] or "The submission's process reported a failure.",
        str(failure.get("log_tail", ""))[-4000:],
    )


def reported_timing(raw: Any) -> CallTiming:
    if not isinstance(raw, dict):
        raise TypeError("no timing")
    fields = {name: float(raw.get(name, 0.0)) for name in ("event_us", "sync_us", "flush_us", "clock_mhz", "host_us")}
    return CallTiming(**fields)
