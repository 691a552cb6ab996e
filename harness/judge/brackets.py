"""Times the judge can stand behind: every time the runner reports must fit inside the judge's own clock.

For each call the judge reads ``time.perf_counter_ns`` (CLOCK_MONOTONIC, one clock for every process of
the machine) **before the call's inputs become visible to the runner** (before it copies them into the
runner's CUDA buffers, or sends their bytes) and again once the runner's answer, with the output, has arrived
and (on CUDA) the runner's queued work is complete: the **bracket**. It also reads what the call **spent** as it
can see it (``spent``): on CUDA the bracket less the judge's own copy of the inputs (timed with the judge's own
events); on the CPU the CPU time of every process of the job but the judge (``harness.judge.judge_clock``) over
the bracket, capped by the bracket itself: the CPU time over the cores the call really kept busy, which waiting
for a busy core does not inflate and a helper process does not escape. The runner's reported time is kept only if

1. **it fits**: reported <= bracket (+ the clocks' resolution), on every call; a time shorter than the
   work is possible only by answering before the work is done, and then the output the judge copies at
   the bracket's end is not the answer (the checker rejects it);
2. **the rest is accounted for**, per shape: the median of (spent - reported) is at most what an empty call
   spends as the judge measures it (``Allowance``: measured before the submission was imported, from the
   judge's readings only), plus the time to move the bytes the call really moved (a view's extent, not its
   storage's; ``moved_bytes``) at a cost per byte the judge measured alone (on the CPU in the job's CPU time, from
   calibration calls of a large input; on CUDA its own socket's wall time), plus a slack (``SLACK``).

A failure of either is ``FailureKind.UNTRUSTED_TIME``: the runner claimed a time its own work cannot have
taken. The argument, the residue these tolerances leave and the tests: ``docs/integrity.md``, "The judge's clock".
"""

from __future__ import annotations

import json
import logging
import statistics
from dataclasses import dataclass, field
from typing import Any

import torch

RESOLUTION_US = 2.0  # CUDA events (0.5 us) against the host clock, plus rounding
RESOLUTION_SHARE = 0.001
# Unexplained time tolerated per median call, (absolute us, share of the reported median), per device. On CUDA:
# what an exchange of a real call costs beyond the calibration's; honest shapes that move hundreds of MB showed
# 0.40-0.93 ms of it on H200s (2026-11-27, four calls of bench/gpu_round.sh; Python and .cu solutions alike), whose
# cause was not found: neither the outputs' mapping nor the calibration's output size explains it. On the CPU, with
# the judge moving host bytes itself and counting the busiest thread: the exchange after a kernel that left the caches
# cold, up to 280 us on honest shapes of this project's problems on a 2-core machine under twice its load (-360 to
# +280 us over 66 shapes, 2026-11-27); where the judge cannot read the runner's memory, the socket's exchange
# (-1.3 to +0.4 ms before). The rest is what a lie may shave off unnamed (docs/integrity.md, "The judge's clock").
SLACK = {"cpu": (600.0, 0.25), "cpu-socket": (2000.0, 0.25), "cuda": (1200.0, 0.25)}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Allowance:
    """What the judge itself saw an empty call cost, before the submission existed."""

    exchange_us: float  # median spent on an empty call (on CUDA the whole spending; on the CPU its untimed part)
    us_per_byte: float  # what a byte of the call adds, as the judge measured it before the import
    baseline_gap_us: float  # the runner's sync gap while it held only the harness (the side-stream baseline)
    device: str
    # on the CPU, per timed shape (``shape_key``): the untimed spending of calls with an input of that shape, and
    # their bytes, measured before the import (harness.judge.calibration.shapes)
    shapes: dict[str, tuple[float, int]] = field(default_factory=dict)
    via_socket: bool = False  # CPU: host bytes cross the socket (the runner's memory is out of the judge's reach)

    def of(self, moved: int, shape: str | None = None) -> float:
        """Allowed for an exchange of ``moved`` bytes: from the shape's own calls where they were made, else from
        the empty call's."""
        exchange_us, base = self.shapes.get(shape or "", (self.exchange_us, 0))
        return max(0.0, exchange_us + (moved - base) * self.us_per_byte)


def shape_key(spec: dict[str, Any]) -> str:
    """A timed shape's name in ``Allowance.shapes``: its spec without the seed."""
    return json.dumps({k: v for k, v in spec.items() if k != "seed"}, sort_keys=True, default=str)


def allowance(spent_us: list[float], gaps_us: list[float], device: str, us_per_byte: float = 0.0) -> Allowance:
    """The allowance from empty calls made before the submission was imported: ``spent_us`` as the judge saw them,
    ``gaps_us`` their sync gaps (the harness's own timer; no submission code existed to answer them)."""
    if not spent_us or len(spent_us) != len(gaps_us):
        raise ValueError("allowance needs as many sync gaps as spent times, at least one")
    if us_per_byte < 0:
        raise ValueError(f"us_per_byte must not be negative, not {us_per_byte}")
    return Allowance(max(0.0, statistics.median(spent_us)), us_per_byte, statistics.median(gaps_us), device)


def spent(bracket_us: float, cpu_us: float | None) -> float:
    """What a call spent as the judge sees it: the bracket on CUDA (``cpu_us`` None); on the CPU, where the job's
    threads cannot be told apart, its CPU time over the cores the call kept busy, i.e. cpu / max(1, cpu / bracket)
    = min(cpu, bracket)."""
    return bracket_us if cpu_us is None else max(0.0, min(cpu_us, bracket_us))


def cpu_spent(total_us: float, longest_us: float, cores: float, wall_us: float | None = None) -> float:
    """What a call spent on the CPU where the judge sees each thread: at least the CPU time of its busiest thread
    (one thread runs on one core at a time), at least all of it spread over every core the job may use, and at
    least all of it up to ``wall_us``, the bracket less what the runner's main thread waited for a core. Threads
    that take turns (each one's share done before the next starts) look parallel to the first two bounds, so a
    serial kernel relayed over C threads counted 1/C of its time; not to the wall. Waiting for a core counts in
    none, and the judge's own work (staging, reading the answer) is not the job's."""
    serial = min(total_us, wall_us) if wall_us is not None else 0.0
    return max(0.0, longest_us, total_us / max(1.0, cores), serial)


def moved_bytes(value: Any, skip: frozenset[int] = frozenset()) -> int:
    """Bytes of the host tensors in ``value`` a copy through the socket really has to move: per storage, the union
    of the byte ranges its tensors reach (a 16-byte view of a 64 MiB buffer moves 16 bytes, whatever the transport
    sends). CUDA tensors cross by IPC, at no cost per byte in the bracket; storages at an address in ``skip`` (the
    call's input buffers, which the judge read itself) cost the job nothing either."""
    ranges: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for tensor in _tensors(value, 0):
        if not tensor.numel() or tensor.device.type != "cpu" or tensor.untyped_storage().data_ptr() in skip:
            continue
        size = tensor.element_size()
        first = int(tensor.storage_offset())  # a plain int on real tensors (torch types it int | SymInt, for tracing)
        last = first + sum((n - 1) * abs(s) for n, s in zip(tensor.shape, tensor.stride(), strict=True))
        key = (str(tensor.device), tensor.untyped_storage().data_ptr())
        ranges.setdefault(key, []).append((first * size, (last + 1) * size))
    total = 0
    for spans in ranges.values():
        end = -1
        for start, stop in sorted(spans):
            start = max(start, end)
            total += max(0, stop - start)
            end = max(end, stop)
    return total


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
    reported_us: list[float],
    spent_us: list[float],
    moved: list[int],
    allowed: Allowance,
    reaped_us: list[float] | None = None,
    shape: str | None = None,
) -> str | None:
    """Why a shape's reported times are too short for what the judge saw them spend, or None. ``reaped_us``: the part
    of each call's spending that processes reaped during it left their parents, which the kernel reports in clock
    ticks (10 ms): each call counts the shape's mean of it instead of its own 0 or tick, or a child doing 4 ms of work
    per call would show nothing in most calls, and so in the median."""
    if not reported_us:
        return None
    if reaped_us:
        share = statistics.fmean(reaped_us)
        spent_us = [max(0.0, s - r) + share for s, r in zip(spent_us, reaped_us, strict=True)]
    excess = statistics.median(
        b - r - allowed.of(n, shape) for r, b, n in zip(reported_us, spent_us, moved, strict=True)
    )
    median = statistics.median(reported_us)
    slack_us, slack_share = SLACK["cpu-socket" if allowed.via_socket else allowed.device]
    log.debug(
        "unexplained time per call: %.1f us (median reported %.1f us, allowed %.1f us + %.1f us/MB, slack %.0f us)",
        excess,
        median,
        allowed.of(0, shape),
        allowed.us_per_byte * 1e6,
        max(slack_us, slack_share * median),
    )
    if excess > max(slack_us, slack_share * median):
        what = "the job's CPU time" if allowed.device == "cpu" else "the judge's clock"
        return (
            f"the median call was reported as {median:.1f} us, but {what} shows {excess:.1f} us more per call "
            "than an empty call and the data transfer explain"
        )
    return None


def _tensors(value: Any, depth: int) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 32:
        return []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    return [t for item in items for t in _tensors(item, depth + 1)]
