"""The rules a runner's reported time must meet (harness.judge.brackets), on made-up numbers."""

from __future__ import annotations

import pytest

from harness.judge import brackets


def test_a_reported_time_must_fit_the_judges_bracket():
    assert brackets.outside(99.0, 100.0) is None
    assert brackets.outside(101.0, 100.0) is None  # within the clocks' resolution
    assert "cannot be longer" in brackets.outside(150.0, 100.0)
    assert brackets.outside(float("nan"), 100.0) is not None
    assert brackets.outside(-1.0, 100.0) is not None


def test_an_honest_shape_is_accounted_for():
    allowed = brackets.allowance([30.0, 32.0, 31.0], [1.0, 1.0, 1.0], "cpu")  # an empty call: 30 us of exchange
    assert allowed.exchange_us == pytest.approx(30.0)
    reported = [500.0] * 20
    spent = [r + 30.0 + 40.0 for r in reported]  # a little scatter on top
    assert brackets.unaccounted(reported, spent, [0] * 20, allowed) is None


def test_a_time_far_below_what_the_call_spent_is_named():
    allowed = brackets.allowance([30.0], [1.0], "cuda")
    reported = [0.9] * 20
    spent = [20_000.0] * 20  # 20 ms of work reported as 0.9 us
    why = brackets.unaccounted(reported, spent, [0] * 20, allowed)
    assert why is not None and "the judge's clock" in why


def test_the_answers_bytes_are_allowed_for():
    allowed = brackets.allowance([10.0], [0.0], "cuda")
    reported, spent = [100.0] * 5, [100.0 + 10.0 + 1000.0] * 5  # 1 ms moving 100 kB
    assert brackets.unaccounted(reported, spent, [100_000] * 5, allowed) is None
    assert brackets.unaccounted(reported, spent, [0] * 5, allowed) is not None


def test_allowance_needs_matching_samples():
    with pytest.raises(ValueError):
        brackets.allowance([], [], "cpu")
    with pytest.raises(ValueError):
        brackets.allowance([1.0], [1.0, 2.0], "cpu")
