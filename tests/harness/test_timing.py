"""Timers on CPU (real perf_counter_ns), their immunity to patched clocks, and device info without CUDA."""

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from harness.device import sm_clock_mhz, system_info
from harness.timing import CallTiming, CpuTimer, calibrate_sync_gap, make_timer, warm_up_device

REPO = Path(__file__).resolve().parents[2]
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour of a CPU-only machine")


def test_cpu_timer_returns_the_value_and_positive_times():
    timer = make_timer("cpu")
    out, timing = timer.time_call(lambda: sum(range(10_000)))
    assert out == sum(range(10_000))
    assert isinstance(timing, CallTiming) and timing.event_us > 0
    assert timing.sync_us == timing.event_us


def test_cpu_timer_reports_microseconds():
    _, timing = make_timer("cpu").time_call(lambda: time.sleep(0.002))
    assert timing.event_us >= 2000.0  # slept at least 2 ms: a lower bound, not a speed claim


def test_cpu_timer_ignores_a_clock_patched_after_it_was_built(monkeypatch):
    timer = make_timer("cpu")

    def cheating_kernel() -> str:
        # what a submission would do: freeze every host clock the harness might read
        monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
        monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
        time.sleep(0.001)
        return "done"

    out, timing = timer.time_call(cheating_kernel)
    assert out == "done" and timing.event_us >= 1000.0
    assert time.perf_counter_ns() == 0  # the patch is live ...
    _, naive = CpuTimer().time_call(lambda: time.sleep(0.001))
    assert naive.event_us == 0.0  # ... and fools a timer built after it


def test_untimed_returns_the_value():
    assert make_timer("cpu").untimed(lambda: 42) == 42


def test_exceptions_from_the_call_propagate():
    with pytest.raises(ZeroDivisionError):
        make_timer("cpu").time_call(lambda: 1 / 0)


def test_cpu_sync_gap_baseline_is_zero():
    assert calibrate_sync_gap(make_timer("cpu"), calls=5) == 0.0
    with pytest.raises(ValueError):
        calibrate_sync_gap(make_timer("cpu"), calls=0)


def test_warm_up_is_a_no_op_on_cpu_and_rejects_negative_time():
    warm_up_device(make_timer("cpu"), seconds=0.2)
    with pytest.raises(ValueError):
        warm_up_device(make_timer("cpu"), seconds=-1.0)


def test_unknown_device_has_no_timer():
    with pytest.raises(ValueError, match="'tpu'"):
        make_timer("tpu")


@no_cuda
def test_cuda_timer_on_a_cpu_machine_fails_with_a_clear_message():
    with pytest.raises(RuntimeError, match="no usable CUDA device"):
        make_timer("cuda")


def test_importing_the_measurement_modules_loads_neither_torch_nor_cuda():
    code = "import sys, harness.timing, harness.device, harness.stats, harness.roofline; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_system_info_on_cpu():
    info = system_info("cpu")
    assert info.device == "cpu" and info.torch == torch.__version__
    assert info.python == ".".join(map(str, sys.version_info[:3]))
    assert info.platform and info.gpu_name == "" and info.gpu_count == 0 and info.l2_bytes == 0


def test_sm_clock_is_none_or_a_positive_mhz():
    clock = sm_clock_mhz()
    assert clock is None or (isinstance(clock, int) and clock > 0)


@no_cuda
def test_gpu_timing_check_stops_cleanly_without_a_gpu():
    done = subprocess.run(
        [sys.executable, "bench/gpu_timing_check.py"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "needs a CUDA GPU" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.cuda
def test_cuda_timer_reads_the_sm_clock_and_the_flush_with_each_call():
    timer = make_timer("cuda")
    _, timing = timer.time_call(lambda: torch.ones(1 << 20, device="cuda").add_(1))
    assert 100 < timing.clock_mhz < 5000 and timing.flush_us > 0


@pytest.mark.cuda
def test_host_work_is_timed_with_the_host_clock():
    """Host work alone never reaches the stream: events see it only beyond the launch-hiding spin."""
    timer = make_timer("cuda")
    _, host = timer.time_host_call(lambda: time.sleep(300e-6))
    assert host.event_us >= 300 and host.sync_us == host.event_us
