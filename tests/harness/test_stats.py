"""Statistics of the timing loop: CI of the median, stop rule, per-shape summary, score, escape check."""

import math
import random
import statistics

import numpy as np
import pytest

from harness.stats import (
    StopRule,
    address_spread,
    ci_target,
    escaped_timing,
    median_ci,
    score,
    shape_stats,
    stability_flags,
)


def shuffled(values: list[float], seed: int = 7) -> list[float]:
    out = list(values)
    random.Random(seed).shuffle(out)
    return out


# --- median_ci: 1-based ranks floor(n/2 - d), ceil(n/2 + 1 + d) with d = 0.98 sqrt(n) ---------------


def test_median_ci_n20_uses_ranks_5_and_16():
    # d = 0.98 * sqrt(20) = 4.38: ranks floor(5.62) = 5 and ceil(15.38) = 16
    assert median_ci(shuffled([float(i) for i in range(1, 21)])) == (5.0, 16.0)


def test_median_ci_n100_uses_ranks_40_and_61():
    # d = 9.8: ranks floor(40.2) = 40 and ceil(60.8) = 61; samples are 10 x rank
    assert median_ci(shuffled([10.0 * i for i in range(1, 101)])) == (400.0, 610.0)


def test_median_ci_wider_for_higher_confidence():
    # 99 %: d = 2.576 / 2 * 10 = 12.88: ranks floor(37.12) = 37 and ceil(63.88) = 64
    assert median_ci([float(i) for i in range(1, 101)], confidence=0.99) == (37.0, 64.0)


def test_median_ci_clamps_ranks_for_tiny_samples():
    assert median_ci([5.0]) == (5.0, 5.0)
    assert median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)  # ranks -1 and 5 clamp to 1 and 3


@pytest.mark.parametrize("samples, confidence", [([], 0.95), ([1.0], 0.0), ([1.0], 1.0)])
def test_median_ci_rejects_bad_input(samples, confidence):
    with pytest.raises(ValueError):
        median_ci(samples, confidence)


# --- StopRule -----------------------------------------------------------------------------------------

NOISY = [100.0, 200.0] * 5000  # CI of the median spans the two values: never converges


def test_stop_rule_defaults_follow_the_method():
    rule = StopRule()
    assert (rule.min_samples, rule.check_every, rule.ci_half_width) == (20, 10, 0.005)
    assert (rule.budget_s, rule.max_samples, rule.max_wall_s) == (0.5, 10_000, 5.0)


def test_no_stop_before_min_samples_even_over_budget():
    assert StopRule().decide([50.0] * 19, wall_s=1.0) is None


def test_constant_samples_converge_at_min_samples():
    assert StopRule().decide([50.0] * 20, wall_s=0.01) == "converged"


def test_convergence_is_checked_only_every_check_every_samples():
    rule = StopRule()
    assert rule.decide([50.0] * 21, wall_s=0.01) is None
    assert rule.decide([50.0] * 29, wall_s=0.01) is None
    assert rule.decide([50.0] * 30, wall_s=0.01) == "converged"


@pytest.mark.parametrize("target", [0.005, 0.01])
def test_low_noise_data_converges_on_a_check(target):
    rng = random.Random(1)
    rule = StopRule(ci_half_width=target)
    samples: list[float] = []
    reason = None
    while reason is None:
        samples.append(rng.gauss(100.0, 2.0))  # 2 % CV: needs well over 20 samples for 0.5 %
        reason = rule.decide(samples, wall_s=0.0)
    assert reason == "converged"
    assert len(samples) > 20 and (len(samples) - 20) % 10 == 0
    low, high = median_ci(samples)
    assert (high - low) / (2 * statistics.median(samples)) <= target


def test_a_wider_target_needs_fewer_samples():
    rng = random.Random(3)
    samples = [rng.gauss(100.0, 2.0) for _ in range(5000)]

    def needed(target: float) -> int:
        rule = StopRule(ci_half_width=target)
        return next(n for n in range(1, len(samples)) if rule.decide(samples[:n], wall_s=0.0))

    assert needed(0.005 * 5**0.5) < needed(0.005) / 2


def test_noisy_data_stops_on_the_loops_wall_budget_at_any_sample():
    rule = StopRule()
    assert rule.decide(NOISY[:20], wall_s=0.49) is None
    assert rule.decide(NOISY[:23], wall_s=0.5) == "budget"


def test_caps_stop_on_samples_and_wall_time():
    rule = StopRule(min_samples=20, max_samples=40)
    assert rule.decide(NOISY[:40], wall_s=0.0) == "cap"
    assert rule.decide(NOISY[:5], wall_s=5.0) == "cap"  # slow kernel: wall cap before min
    assert rule.decide(NOISY[:19], wall_s=4.9) is None


# --- ci_target: the score's 0.5 % spread over the shapes it aggregates ----------------------------------


def test_geom_lets_each_shape_be_sqrt_shapes_wider():
    assert [ci_target("geom", 4, i) for i in range(4)] == [pytest.approx(0.01)] * 4
    assert ci_target("geom", 1, 0) == pytest.approx(0.005)


def test_last_holds_only_the_scored_shape_to_the_scores_width():
    assert ci_target("last", 4, 3) == pytest.approx(0.005)
    assert ci_target("last", 4, 0) == pytest.approx(0.01)


def test_mean_holds_every_shape_to_the_scores_width():
    assert {ci_target("mean", 5, i) for i in range(5)} == {0.005}


def test_ci_target_rejects_a_shape_outside_the_list():
    with pytest.raises(ValueError):
        ci_target("geom", 3, 3)


# --- address_spread: do calls at some output addresses run slower? ------------------------------------


def test_address_spread_compares_the_medians_per_address():
    samples = [100.0, 101.0, 99.0, 100.0, 100.0] * 4 + [110.0, 111.0, 109.0, 110.0, 110.0] * 4
    addresses = [1] * 20 + [2] * 20
    assert address_spread(samples, addresses) == pytest.approx(0.10)


def test_address_spread_ignores_rare_addresses_and_needs_two():
    samples = [100.0] * 40 + [500.0] * 2
    assert address_spread(samples, [1] * 40 + [2] * 2) is None
    with pytest.raises(ValueError):
        address_spread([1.0], [])


@pytest.mark.parametrize(
    "settings",
    [
        {"min_samples": 0},
        {"check_every": 0},
        {"min_samples": 30, "max_samples": 20},
        {"ci_half_width": 0.0},
        {"budget_s": -1.0},
        {"max_wall_s": math.nan},
        {"budget_s": math.inf},
    ],
)
def test_stop_rule_rejects_bad_settings(settings):
    with pytest.raises(ValueError):
        StopRule(**settings)


# --- shape_stats -------------------------------------------------------------------------------------


def test_shape_stats_fields_by_hand():
    samples = [10.0, 12.0, 11.0, 13.0, 9.0, 10.0, 11.0, 10.0, 12.0, 100.0]
    # sorted: 9 10 10 10 11 11 12 12 13 100
    stats = shape_stats({"size": 4}, samples, first_call_us=250.0, sync_gaps_us=[1.0, 30.0, 2.0], stop_reason="budget")
    assert stats.spec == {"size": 4} and stats.n == 10 and stats.stop_reason == "budget"
    assert stats.median_us == 11.0
    assert stats.mean_us == pytest.approx(19.8)
    assert stats.trimmed_mean_us == pytest.approx(89 / 8)  # one sample cut from each end
    assert stats.std_us == pytest.approx(statistics.stdev(samples))
    assert (stats.min_us, stats.max_us) == (9.0, 100.0)
    assert stats.p10_us == pytest.approx(9.9) and stats.p90_us == pytest.approx(21.7)
    assert (stats.ci_low_us, stats.ci_high_us) == (9.0, 100.0)  # n = 10: ranks 1 and 10
    assert stats.first_call_us == 250.0 and stats.sync_gap_us == 2.0
    assert stats.flags == ["heavy_tail"]  # mean / median = 1.8
    assert stats.samples_us == samples  # raw, in call order


def test_percentiles_match_numpy():
    samples = [random.Random(3).lognormvariate(3, 0.5) for _ in range(137)]
    stats = shape_stats({}, samples, 0.0, [], "converged")
    assert stats.p10_us == pytest.approx(np.percentile(samples, 10))
    assert stats.p90_us == pytest.approx(np.percentile(samples, 90))


def test_tight_samples_carry_no_flag_and_cpu_gap_is_zero():
    stats = shape_stats({}, [100.0, 101.0, 99.0, 100.0], 120.0, [], "converged")
    assert stats.flags == [] and stats.sync_gap_us == 0.0 and stats.std_us > 0


@pytest.mark.parametrize("samples", [[], [1.0, math.nan], [math.inf]])
def test_shape_stats_rejects_missing_or_non_finite_samples(samples):
    with pytest.raises(ValueError):
        shape_stats({}, samples, 0.0, [], "cap")


# --- score -------------------------------------------------------------------------------------------


def test_score_rules():
    assert score([1.0, 100.0], "geom") == pytest.approx(10.0)
    assert score([2.0, 8.0, 4.0], "geom") == pytest.approx(4.0)
    assert score([1.0, 2.0, 6.0], "mean") == pytest.approx(3.0)
    assert score([1.0, 2.0, 6.0], "last") == 6.0


@pytest.mark.parametrize(
    "medians, rule",
    [
        ([], "geom"),
        ([1.0, 0.0], "geom"),
        ([1.0, -2.0], "mean"),
        ([math.nan], "last"),
        ([math.inf], "geom"),
        ([1.0], "median"),
    ],
)
def test_score_rejects_bad_input(medians, rule):
    with pytest.raises(ValueError):
        score(medians, rule)


# --- escaped_timing: excess gap over the baseline > max(20 us, 10 % of the event time) ----------------


def test_escape_threshold_is_20us_for_short_calls():
    assert not escaped_timing(sync_gap_us=30.0, baseline_gap_us=10.0, event_us=100.0)
    assert escaped_timing(sync_gap_us=30.5, baseline_gap_us=10.0, event_us=100.0)


def test_escape_threshold_is_10_percent_for_long_calls():
    assert not escaped_timing(sync_gap_us=110.0, baseline_gap_us=10.0, event_us=1000.0)
    assert escaped_timing(sync_gap_us=111.0, baseline_gap_us=10.0, event_us=1000.0)


def test_side_stream_shape_is_escaped_and_non_finite_fails_closed():
    # measuring.md's side-stream demo: 0.257 ms of events, ~21 ms more behind the device-wide sync
    assert escaped_timing(sync_gap_us=21_300.0, baseline_gap_us=12.0, event_us=257.0)
    assert escaped_timing(sync_gap_us=math.nan, baseline_gap_us=12.0, event_us=257.0)


# --- stability_flags: what makes a median likely to differ in another process ----------------------------


def _shape(samples: list[float], **diagnostics) -> object:
    stats = shape_stats({"size": 1}, samples, first_call_us=1.0, sync_gaps_us=[], stop_reason="converged")
    for name, value in diagnostics.items():
        setattr(stats, name, value)
    return stats


def test_a_steady_shape_raises_no_flag():
    assert (
        stability_flags(
            _shape([100.0] * 60, clock_mhz=1980.0, min_clock_mhz=1960.0, address_spread=0.01), max_clock_mhz=1980
        )
        == []
    )


@pytest.mark.parametrize(
    ("samples", "diagnostics", "flag"),
    [
        ([100.0] * 60, {"clock_mhz": 1500.0, "min_clock_mhz": 1500.0}, "clock_below_max"),
        ([100.0] * 60, {"clock_mhz": 1980.0, "min_clock_mhz": 1200.0}, "clock_dips"),
        ([100.0] * 60, {"address_spread": 0.11}, "placement_sensitive"),
        ([100.0] * 30 + [108.0] * 30, {}, "drift"),
    ],
)
def test_each_cause_of_a_run_to_run_difference_is_named(samples, diagnostics, flag):
    assert stability_flags(_shape(samples, **diagnostics), max_clock_mhz=1980) == [flag]


def test_no_clock_flags_without_readings_and_no_drift_on_few_samples():
    assert stability_flags(_shape([100.0] * 10 + [120.0] * 10), max_clock_mhz=None) == []
