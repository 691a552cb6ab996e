"""Roofline maths: the safe expression evaluator, achieved rates, % of peak, the speed-of-light floor."""

import json
import math

import pytest

from harness.codec import from_jsonable
from harness.device import PEAKS_FILE_ENV, Peaks, cpu_speed_limit, peaks_for
from harness.problem import Roofline
from harness.roofline import (
    IMPOSSIBLE_FRACTION,
    achieved,
    below_speed_of_light,
    evaluate_expr,
    impossible_time,
    speed_of_light_floor_us,
)

SPEC = {"n": 1_000_000, "k": 3, "dtype": "fp16", "seed": 42}
# A made-up GPU with round numbers: 1000 GB/s, 100 TFLOP/s fp16, no fp8.
ROUND = Peaks(bandwidth_gbps=1000.0, tflops={"fp32": 10.0, "fp16": 100.0})
VECTORADD = Roofline(bytes="3 * n * 2", flops="n", dtype="fp16")  # 6e6 bytes, 1e6 flops


@pytest.mark.parametrize(
    "expr, value",
    [
        ("3 * n * 2", 6e6),
        ("n / 4", 250_000.0),
        ("n // 3", 333_333.0),
        ("n % 7", 1_000_000 % 7),
        ("2 ** k", 8.0),
        ("-(k - 5)", 2.0),
        ("+k", 3.0),
        ("(k + 1) * (k - 1)", 8.0),
        ("min(n, 10)", 10.0),
        ("max(k, 2, 7)", 7.0),
        ("2 * n ** 1.5 + 0.5", 2e9 + 0.5),
        ("1e3", 1000.0),
    ],
)
def test_arithmetic_over_spec_args(expr, value):
    assert evaluate_expr(expr, SPEC) == pytest.approx(value)


@pytest.mark.parametrize(
    "expr, complaint",
    [
        ("__import__('os')", "only calls allowed"),
        ("__import__('os').system('true')", "only calls allowed"),
        ("n.__class__", "Attribute"),
        ("abs(n)", "only calls allowed"),
        ("open('/etc/passwd')", "only calls allowed"),
        ("min(n, k, key=len)", "only calls allowed"),
        ("min([n, k])", "only calls allowed"),
        ("(lambda: 1)()", "only calls allowed"),
        ("lambda: 1", "Lambda"),
        ("n[0]", "Subscript"),
        ("n > k", "Compare"),
        ("n if k else 1", "IfExp"),
        ("'abc'", "not a number"),
        ("True", "not a number"),
        ("dtype", "not a number"),
        ("m * 2", "unknown name 'm'"),
        ("n / (k - 3)", "divides by zero"),
        ("9 ** 9 ** 9", "too large"),
        ("(-8) ** 0.5", "not a real number"),
        ("1e308 * 10", "not finite"),
        ("3 *", "not valid arithmetic"),
        ("n; import os", "not valid arithmetic"),
        ("+" * 600 + "1", "longer than"),
    ],
)
def test_anything_but_arithmetic_is_rejected(expr, complaint):
    with pytest.raises(ValueError, match=complaint):
        evaluate_expr(expr, SPEC)


def test_achieved_rates_and_fraction_by_hand():
    gbps, tflops, fraction = achieved(VECTORADD, SPEC, median_us=10.0, peaks=ROUND)
    assert gbps == pytest.approx(600.0)  # 6e6 B in 10 us
    assert tflops == pytest.approx(0.1)  # 1e6 flop in 10 us
    assert fraction == pytest.approx(0.6)  # bandwidth-bound: 600 of 1000 GB/s


def test_compute_bound_fraction_uses_the_declared_dtype():
    matmul = Roofline(bytes="3 * n * n * 2", flops="2 * n ** 3", dtype="bf16")
    gbps, tflops, fraction = achieved(matmul, {"n": 4096}, 200.0, peaks_for("NVIDIA H100 80GB HBM3"))
    assert tflops == pytest.approx(2 * 4096**3 / 200e-6 / 1e12)
    assert fraction == pytest.approx(tflops / 989.5)  # compute fraction beats 503 / 3350 GB/s
    assert gbps / 3350 < fraction


def test_achieved_without_peaks_or_roofline():
    assert achieved(None, SPEC, 10.0, ROUND) == (None, None, None)
    gbps, tflops, fraction = achieved(VECTORADD, SPEC, 10.0, None)
    assert (gbps, fraction) == (pytest.approx(600.0), None) and tflops == pytest.approx(0.1)
    no_fp8 = achieved(Roofline(bytes="0", flops="n", dtype="fp8"), SPEC, 10.0, ROUND)
    assert no_fp8 == (None, pytest.approx(0.1), None)  # no fp8 peak, no bytes: no fraction
    assert achieved(VECTORADD, SPEC, 0.0, ROUND) == (None, None, None)


def test_floor_is_the_slower_of_memory_and_compute_at_peak():
    assert speed_of_light_floor_us(VECTORADD, SPEC, ROUND) == pytest.approx(6.0)  # 6e6 B at 1000 GB/s
    compute_heavy = Roofline(bytes="8", flops="n * 1000", dtype="fp32")  # 1e9 flop at 10 TF
    assert speed_of_light_floor_us(compute_heavy, SPEC, ROUND) == pytest.approx(100.0)
    assert speed_of_light_floor_us(VECTORADD, SPEC, None) is None
    assert speed_of_light_floor_us(Roofline(), SPEC, ROUND) is None  # no work declared


def test_times_under_80_percent_of_the_floor_are_impossible():
    assert IMPOSSIBLE_FRACTION == 0.8  # the floor is 6 us: 4.8 us is the line
    assert below_speed_of_light(VECTORADD, SPEC, 4.79, ROUND)
    assert not below_speed_of_light(VECTORADD, SPEC, 4.81, ROUND)
    assert not below_speed_of_light(VECTORADD, SPEC, 5.5, ROUND)  # faster than the floor, within grace
    assert not below_speed_of_light(VECTORADD, SPEC, 4.81, ROUND, dtype="fp32")
    assert not below_speed_of_light(VECTORADD, SPEC, 1.0, None)  # unknown GPU: no floor


def test_the_reason_names_the_bound_resource_and_the_floor():
    memory = impossible_time(VECTORADD, SPEC, 1.0, ROUND)
    assert memory == "1 us is under 80% of the 6 us this GPU needs at least (6e+06 bytes at 1000 GB/s, its peak)"
    compute = impossible_time(Roofline(bytes="8", flops="n * 1000", dtype="fp32"), SPEC, 50.0, ROUND)
    assert "100 us" in compute and "1e+09 operations at 10 TFLOP/s" in compute
    assert impossible_time(VECTORADD, SPEC, 6.0, ROUND) is None
    assert "not a positive, finite time" in impossible_time(VECTORADD, SPEC, 0.0, ROUND)


@pytest.mark.parametrize("median_us", [0.0, -1.0, math.nan, math.inf])
def test_non_positive_or_non_finite_times_are_always_implausible(median_us):
    assert below_speed_of_light(None, SPEC, median_us, None)


def test_negative_work_is_a_problem_error():
    with pytest.raises(ValueError, match="negative work"):
        achieved(Roofline(bytes="n - 2 * n"), SPEC, 10.0, ROUND)


def test_roofline_dtype_reads_from_task_yml_data_with_fp32_default():
    assert from_jsonable(Roofline, {"bytes": "n", "flops": "0"}).dtype == "fp32"
    assert from_jsonable(Roofline, {"bytes": "n", "flops": "0", "dtype": "bf16"}).dtype == "bf16"


@pytest.mark.parametrize(
    "name, bandwidth",
    [
        ("NVIDIA H100 80GB HBM3", 3350.0),
        ("NVIDIA H100 PCIe", 2000.0),
        ("NVIDIA H100 NVL", 3900.0),
        ("NVIDIA H200", 4800.0),
        ("NVIDIA H200 NVL", 4800.0),
        ("NVIDIA A100-SXM4-80GB", 2039.0),
        ("NVIDIA A100 80GB PCIe", 1935.0),
        ("NVIDIA A100-SXM4-40GB", 1555.0),
        ("NVIDIA A100-PCIE-40GB", 1555.0),
        ("NVIDIA L40S", 864.0),
        ("NVIDIA L4", 300.0),
        ("Tesla T4", 320.0),
        ("NVIDIA B200", 8000.0),
    ],
)
def test_peaks_for_known_gpus(name, bandwidth):
    peaks = peaks_for(name)
    assert peaks is not None and peaks.bandwidth_gbps == bandwidth and peaks.tflops["fp32"] > 0


def test_peaks_for_dense_hopper_rates_and_unknown_names():
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    assert h100.tflops == {"fp32": 67.0, "tf32": 494.75, "bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}
    for unknown in ("NVIDIA GH200 480GB", "NVIDIA GeForce RTX 4090", "cpu", ""):
        assert peaks_for(unknown) is None


def test_measured_peaks_override_the_datasheet(tmp_path, monkeypatch):
    measured = tmp_path / "peaks.json"
    measured.write_text(
        json.dumps(
            {
                "H100.*HBM3": {"bandwidth_gbps": 3010, "tflops": {"fp16": 700}},
                "RTX 4090": {"bandwidth_gbps": 1008, "tflops": {"fp32": 82.6}},
            }
        )
    )
    monkeypatch.setenv(PEAKS_FILE_ENV, str(measured))
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    assert h100.bandwidth_gbps == 3010 and h100.tflops["fp16"] == 700 and h100.tflops["bf16"] == 989.5
    assert peaks_for("NVIDIA GeForce RTX 4090").tflops == {"fp32": 82.6}  # unknown to the datasheet table
    assert peaks_for("NVIDIA H200").bandwidth_gbps == 4800.0  # not measured: datasheet
    measured.write_text("not json")
    monkeypatch.setenv(PEAKS_FILE_ENV, str(measured) + "x")  # unreadable: datasheet
    assert peaks_for("NVIDIA H100 80GB HBM3").bandwidth_gbps == 3350.0


def test_a_cpu_time_under_what_its_cores_could_move_is_impossible():
    limit = cpu_speed_limit(2.0)
    line = Roofline(bytes="3 * size * size * 4", flops="size * size", dtype="fp32")
    spec = {"size": 768}  # 7.1 MB: at most 2 TB/s on two cores, so at least 3.5 us
    assert impossible_time(line, spec, 40.0, limit) is None  # an honest 40 us
    why = impossible_time(line, spec, 0.5, limit)
    assert why is not None and "the job's 2 CPU cores need" in why
    assert impossible_time(line, {"size": 16}, 0.5, limit) is None  # 3 KB: no floor worth the name
