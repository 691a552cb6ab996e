"""Times the judge can stand behind: every time the runner reports must fit inside the judge's own clock.

For each call the judge reads ``time.perf_counter_ns`` (CLOCK_MONOTONIC, one clock for every process of
the machine) just before it tells the runner to go and again once the runner's answer, with the output,
has arrived and (on CUDA) the runner's queued work is complete: the **bracket**. It also reads what the
call **spent** as it can see it: on CUDA the bracket itself; on the CPU the runner's process CPU clock
(every thread, read from outside) over the bracket, divided by the cores the job may use, which waiting
for a busy core does not inflate. The runner's reported time is kept only if

1. **it fits**: reported ≤ bracket (+ the clocks' resolution), on every call; a time shorter than the
   work is possible only by answering before the work is done, and then the output the judge copies at
   the bracket's end is not the answer (the checker rejects it);
2. **the rest is accounted for**, per shape: the median of (spent − reported) is at most what an empty
   call spends beyond its reported time, measured before the submission was imported (``Allowance``),
   plus the time to move the call's bytes, plus a slack (``SLACK``: an absolute and a relative part).

A failure of either is ``FailureKind.UNTRUSTED_TIME``: the runner claimed a time its own work cannot have
taken. The argument, the residue these tolerances leave and the tests: ``docs/integrity.md``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

RESOLUTION_US = 2.0  # CUDA events (0.5 us) against the host clock, plus rounding
RESOLUTION_SHARE = 0.001
# Unexplained time tolerated per median call, (absolute us, share of the reported median), per device. On CUDA:
# what an exchange of a real call costs beyond the calibration's (0.2-0.28 ms seen on an H200 for outputs of
# 2-512 MB: sharing a fresh allocation by IPC costs more than the calibration's small one). On the CPU the measure
# is CPU time, which torch's thread pools inflate after every parallel region while their threads spin-wait (0.4 ms
# per call seen on an honest histogram on 2 cores): only gross lies are named there.
SLACK = {"cpu": (2000.0, 2.0), "cuda": (400.0, 0.5)}
HOST_BYTES_PER_US = 100.0  # the slowest the runner's answer may move through the socket (100 MB/s)


@dataclass(frozen=True)
class Allowance:
    """What an empty call costs between the judge's clock readings, beyond the runner's reported time."""

    exchange_us: float  # median (spent - reported) of empty calls, before the submission existed
    device: str

    def of(self, payload_bytes: int) -> float:
        """Allowed for an exchange whose answer carried ``payload_bytes`` through the socket."""
        return self.exchange_us + payload_bytes / HOST_BYTES_PER_US


def allowance(spent_us: list[float], reported_us: list[float], device: str) -> Allowance:
    """The allowance from empty calls: ``spent_us`` as the judge saw them, ``reported_us`` by the runner."""
    if not spent_us or len(spent_us) != len(reported_us):
        raise ValueError("allowance needs as many reported times as spent ones, at least one")
    excess = statistics.median(b - r for b, r in zip(spent_us, reported_us, strict=True))
    return Allowance(max(0.0, excess), device)


def outside(reported_us: float, bracket_us: float) -> str | None:
    """Why one call's reported time cannot be true (it exceeds the judge's bracket), or None."""
    if reported_us != reported_us or reported_us < 0:
        return f"a reported time of {reported_us} us"
    if reported_us > bracket_us * (1 + RESOLUTION_SHARE) + RESOLUTION_US:
        return (
            f"a call reported as {reported_us:.1f} us took {bracket_us:.1f} us from the judge's go to the answer; "
            "the reported time cannot be longer"
        )
    return None


def unaccounted(
    reported_us: list[float], spent_us: list[float], payload_bytes: list[int], allowed: Allowance
) -> str | None:
    """Why a shape's reported times are too short for what the judge saw them spend, or None."""
    if not reported_us:
        return None
    excess = statistics.median(
        b - r - allowed.of(n) for r, b, n in zip(reported_us, spent_us, payload_bytes, strict=True)
    )
    median = statistics.median(reported_us)
    slack_us, slack_share = SLACK.get(allowed.device, SLACK["cpu"])
    if excess > max(slack_us, slack_share * median):
        what = "the runner's CPU time" if allowed.device == "cpu" else "the judge's clock"
        return (
            f"the median call was reported as {median:.1f} us, but {what} shows {excess:.1f} us more per call "
            "than an empty call and the data transfer explain"
        )
    return None
