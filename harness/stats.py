"""Statistics of the timing loop: pure functions over per-call times in microseconds (stdlib only).

The method is ``docs/timing.md``: rank on the per-shape median, stop a shape when the 95 % confidence
interval of its median is narrow enough for the score (``ci_target``) or its budget is spent, aggregate
shapes by ``ranking_by``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from harness.result import ShapeStats

HEAVY_TAIL_RATIO = 1.10  # mean / median above this: heavy tail or bimodal, flag for review
TRIM_FRACTION = 0.10  # cut from each end for the trimmed mean
ESCAPE_FLOOR_US = 20.0  # escape threshold: at least this much unexplained sync gap ...
ESCAPE_FRACTION = 0.10  # ... or this fraction of the event time, whichever is larger
SCORE_CI_HALF_WIDTH = 0.005  # the score's 95 % CI the stop rule aims for: 0.5 %
MIN_ADDRESS_SAMPLES = 10  # address_spread: an output address needs this many samples ...
MIN_ADDRESS_SHARE = 0.05  # ... and this share of the shape's samples to count
# stability_flags: what makes a shape's median likely to differ in another fresh process
CLOCK_BELOW_MAX = 0.90  # the shape's median SM clock under this share of the GPU's highest clock
CLOCK_DIP = 0.75  # some call's clock under this share of the shape's median (nvbench's throttle mark)
PLACEMENT_SPREAD = 0.05  # medians per output address differ by more than this
DRIFT = 0.03  # the last third of the samples' median differs from the first third's by more
DRIFT_MIN_SAMPLES = 30


def median_ci(samples_us: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median, from order statistics.

    With ``d = z/2 * sqrt(n)`` (``z`` the two-sided normal quantile; 0.98 for 95 %), the bounds are the
    sorted samples at 1-based ranks ``floor(n/2 - d)`` and ``ceil(n/2 + 1 + d)``, clamped to ``1..n``.
    """
    if not samples_us:
        raise ValueError("median_ci needs at least one sample.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence!r}.")
    ordered = sorted(samples_us)
    n = len(ordered)
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    d = z / 2 * math.sqrt(n)
    low_rank = min(n, max(1, math.floor(n / 2 - d)))
    high_rank = min(n, max(1, math.ceil(n / 2 + 1 + d)))
    return ordered[low_rank - 1], ordered[high_rank - 1]


@dataclass
class StopRule:
    """When a shape's timed loop stops (measuring.md section 5, step 7).

    From ``min_samples`` on, every ``check_every`` samples: stop as "converged" once the median's 95 % CI
    half-width is at most ``ci_half_width`` of the median. From ``min_samples`` on, stop as "budget" once
    the loop has run ``budget_s`` of wall time (calls, fresh inputs and checks). Always stop as "cap" at
    ``max_samples`` samples or ``max_wall_s`` of wall time, so a very slow kernel may stop below the minimum.
    """

    min_samples: int = 20
    check_every: int = 10
    ci_half_width: float = 0.005  # relative to the median: 0.005 is 0.5 %
    budget_s: float = 0.5  # seconds of wall time of one shape's timed loop
    max_samples: int = 10_000
    max_wall_s: float = 5.0  # seconds of wall time per shape, whatever the sample count

    def __post_init__(self) -> None:
        if self.min_samples < 1 or self.check_every < 1:
            raise ValueError("min_samples and check_every must be at least 1.")
        if self.max_samples < self.min_samples:
            raise ValueError(f"max_samples ({self.max_samples}) must not be below min_samples ({self.min_samples}).")
        for name in ("ci_half_width", "budget_s", "max_wall_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, not {value!r}.")

    def decide(self, samples_us: Sequence[float], wall_s: float) -> str | None:
        """None to take another sample, else why to stop: "converged", "budget" or "cap"."""
        n = len(samples_us)
        if n >= self.min_samples:
            if (n - self.min_samples) % self.check_every == 0 and self._converged(samples_us):
                return "converged"
            if wall_s >= self.budget_s:
                return "budget"
        if n >= self.max_samples or wall_s >= self.max_wall_s:
            return "cap"
        return None

    def _converged(self, samples_us: Sequence[float]) -> bool:
        centre = statistics.median(samples_us)
        if centre <= 0:
            return False
        low, high = median_ci(samples_us)
        return (high - low) / (2 * centre) <= self.ci_half_width


def ci_target(ranking_by: str, shapes: int, index: int, score_half_width: float = SCORE_CI_HALF_WIDTH) -> float:
    """The CI half-width one shape must reach so that the score's 95 % CI is about ``score_half_width``.

    ``geom``: the score's relative CI is the root-sum-square of the shapes' over their count, so each of
    ``shapes`` shapes may be ``sqrt(shapes)`` times as wide. ``last``: the last shape is the score; the
    others are shown, not scored, and get the same allowance as under geom. ``mean``: the weights are the
    shapes' times, unknown in advance, so every shape gets the score's own width.
    """
    if shapes < 1 or not 0 <= index < shapes:
        raise ValueError(f"shape index {index} is not among {shapes} shapes.")
    if ranking_by == "mean" or (ranking_by == "last" and index == shapes - 1):
        return score_half_width
    return score_half_width * math.sqrt(shapes)


def address_spread(samples_us: Sequence[float], addresses: Sequence[int]) -> float | None:
    """How much the median differs between the output addresses a shape's calls used: max/min - 1.

    Only addresses with at least ``MIN_ADDRESS_SHARE`` of the samples count; None with fewer than two.
    A spread well above the run-to-run noise says placement in memory (L2 slices, DRAM channels) matters.
    """
    if len(samples_us) != len(addresses):
        raise ValueError("address_spread needs one address per sample.")
    groups: dict[int, list[float]] = {}
    for sample, address in zip(samples_us, addresses, strict=True):
        groups.setdefault(address, []).append(sample)
    enough = max(MIN_ADDRESS_SAMPLES, MIN_ADDRESS_SHARE * len(samples_us))
    medians = [statistics.median(group) for group in groups.values() if len(group) >= enough]
    return max(medians) / min(medians) - 1 if len(medians) >= 2 and min(medians) > 0 else None


def stability_flags(shape: ShapeStats, max_clock_mhz: float | None) -> list[str]:
    """Why this shape's median may read differently in another fresh process; empty when nothing shows.

    ``clock_below_max``: the SM clock stayed clearly below the GPU's highest (power or thermal limits);
    ``clock_dips``: some calls ran at a throttled clock; ``placement_sensitive``: calls whose output landed at
    another address ran at another speed (L2 slice or memory partition), so a process that draws other
    addresses reads another median; ``drift``: the loop's last third ran at another speed than its first.
    """
    flags = []
    if shape.clock_mhz and max_clock_mhz and shape.clock_mhz < CLOCK_BELOW_MAX * max_clock_mhz:
        flags.append("clock_below_max")
    if shape.clock_mhz and shape.min_clock_mhz and shape.min_clock_mhz < CLOCK_DIP * shape.clock_mhz:
        flags.append("clock_dips")
    if shape.address_spread is not None and shape.address_spread > PLACEMENT_SPREAD:
        flags.append("placement_sensitive")
    third = len(shape.samples_us) // 3
    if len(shape.samples_us) >= DRIFT_MIN_SAMPLES:
        first, last = statistics.median(shape.samples_us[:third]), statistics.median(shape.samples_us[-third:])
        if first > 0 and abs(last / first - 1) > DRIFT:
            flags.append("drift")
    return flags


def shape_stats(
    spec: dict, samples_us: list[float], first_call_us: float, sync_gaps_us: list[float], stop_reason: str
) -> ShapeStats:
    """Summarise one shape's timed calls; the raw samples are kept for audit."""
    if not samples_us:
        raise ValueError("shape_stats needs at least one timed sample.")
    if not all(math.isfinite(s) for s in samples_us):
        raise ValueError("a timed sample is not a finite number.")
    ordered = sorted(samples_us)
    n = len(ordered)
    median = statistics.median(ordered)
    mean = statistics.fmean(ordered)
    trim = int(n * TRIM_FRACTION)
    ci_low, ci_high = median_ci(ordered)
    flags = ["heavy_tail"] if median > 0 and mean / median > HEAVY_TAIL_RATIO else []
    return ShapeStats(
        spec=dict(spec),
        n=n,
        median_us=median,
        mean_us=mean,
        trimmed_mean_us=statistics.fmean(ordered[trim : n - trim]),
        std_us=statistics.stdev(ordered) if n > 1 else 0.0,
        ci_low_us=ci_low,
        ci_high_us=ci_high,
        min_us=ordered[0],
        p10_us=_percentile(ordered, 0.10),
        p90_us=_percentile(ordered, 0.90),
        max_us=ordered[-1],
        first_call_us=first_call_us,
        sync_gap_us=statistics.median(sync_gaps_us) if sync_gaps_us else 0.0,
        stop_reason=stop_reason,
        flags=flags,
        samples_us=list(samples_us),
    )


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), for sorted input."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def score(shape_medians_us: Sequence[float], ranking_by: str) -> float:
    """Aggregate per-shape medians: "geom" geometric mean, "mean" arithmetic mean, "last" the last shape."""
    if not shape_medians_us:
        raise ValueError("a score needs at least one shape.")
    if not all(math.isfinite(m) and m > 0 for m in shape_medians_us):
        raise ValueError(f"every shape median must be a positive finite time, got {list(shape_medians_us)}.")
    if ranking_by == "geom":
        return math.exp(math.fsum(math.log(m) for m in shape_medians_us) / len(shape_medians_us))
    if ranking_by == "mean":
        return math.fsum(shape_medians_us) / len(shape_medians_us)
    if ranking_by == "last":
        return float(shape_medians_us[-1])
    raise ValueError(f"ranking_by must be 'geom', 'mean' or 'last', not {ranking_by!r}.")


def escaped_timing(sync_gap_us: float, baseline_gap_us: float, event_us: float) -> bool:
    """True when the device-wide sync waited on work the timed stream's events did not see.

    The excess of the shape's median sync gap over an empty submission's gap must stay within
    max(20 us, 10 % of the event time). Non-finite inputs count as escaped (fail closed).
    """
    excess = sync_gap_us - baseline_gap_us
    allowed = max(ESCAPE_FLOOR_US, ESCAPE_FRACTION * event_us)
    return not excess <= allowed
