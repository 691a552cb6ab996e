"""The terminal report: verdict, tests, shape table, failure paragraph, system line; colour only on request."""

from __future__ import annotations

from harness.result import EvalResult, Failure, FailureKind, Mode, Status, SystemInfo
from harness.result import TestResult as Case  # not collected by pytest as a test class
from harness.result_text import format_us, render
from harness.stats import shape_stats


def _ranked_result() -> EvalResult:
    shape = shape_stats({"size": 4096, "seed": 1}, [10.0, 11.0, 12.0] * 10, 250.0, [0.0] * 30, "converged")
    shape.achieved_gbps, shape.peak_fraction = 123.4, 0.5
    return EvalResult(
        status=Status.PASSED,
        mode=Mode.RANKED,
        problem="vectoradd",
        score_us=11.0,
        tests=[Case({"size": 127}, True)],
        shapes=[shape],
        system=SystemInfo(device="cuda", gpu_name="NVIDIA H100 80GB HBM3", torch="2.13", cuda="12.8"),
        wall_s=1.5,
    )


def test_a_passed_run_shows_score_tests_and_the_shape_table():
    text = render(_ranked_result(), colour=False)
    assert text.splitlines()[0] == "vectoradd · ranked · PASSED"
    assert "score 11 us (geometric mean of 1 shape medians)" in text
    assert "Tests (1/1 passed)" in text
    header = next(line for line in text.splitlines() if "first call" in line)
    for column in ("shape", "median", "CI", "mean", "min", "p10", "p90", "n", "first call", "achieved"):
        assert column in header
    assert "size=4096, seed=1" in text and "123 GB/s, 50% of peak" in text and "250 us" in text
    assert "cuda: NVIDIA H100 80GB HBM3 · CUDA 12.8 · torch 2.13 · 1.5 s wall" in text
    assert "\033[" not in text


def test_a_failure_shows_its_paragraph_and_log_tail_in_colour_when_asked():
    result = EvalResult(
        status=Status.ERROR,
        mode=Mode.TEST,
        problem="vectoradd",
        tests=[Case({"size": 127}, False, "custom_kernel raised ValueError")],
        failure=Failure(FailureKind.EXCEPTION, "custom_kernel raised ValueError: no.", 'File "submission.py", line 2'),
    )
    text = render(result, colour=True)
    assert "\033[31mERROR\033[0m" in text and "FAIL" in text
    assert "Failure (exception)" in text and "custom_kernel raised ValueError: no." in text
    assert 'File "submission.py", line 2' in text


def test_times_take_a_readable_unit():
    assert [format_us(v) for v in (3.456, 1234.0, 2_500_000.0)] == ["3.46 us", "1.23 ms", "2.5 s"]
