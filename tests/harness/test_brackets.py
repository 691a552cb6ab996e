"""The rules a runner's reported time must meet (harness.judge.brackets), on made-up numbers and real tensors."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from harness.judge import brackets


def test_a_reported_time_must_fit_the_judges_bracket():
    assert brackets.outside(99.0, 100.0) is None
    assert brackets.outside(101.0, 100.0) is None  # within the clocks' resolution
    assert "cannot be longer" in brackets.outside(150.0, 100.0)
    assert brackets.outside(float("nan"), 100.0) is not None
    assert brackets.outside(-1.0, 100.0) is not None


def test_the_allowance_is_what_the_judge_saw_an_empty_call_spend():
    allowed = brackets.allowance([30.0, 32.0, 31.0], [4.0, 5.0, 6.0], "cpu", us_per_byte=0.001)
    assert allowed.exchange_us == pytest.approx(31.0)  # no reported time is subtracted: none is believed
    assert allowed.baseline_gap_us == pytest.approx(5.0)
    assert allowed.of(1000) == pytest.approx(32.0)


def test_an_honest_shape_is_accounted_for():
    allowed = brackets.allowance([30.0, 32.0, 31.0], [0.0] * 3, "cpu")
    reported = [500.0] * 20
    spent = [r + 31.0 + 40.0 for r in reported]  # a little scatter on top
    assert brackets.unaccounted(reported, spent, [0] * 20, allowed) is None


def test_a_time_far_below_what_the_call_spent_is_named():
    allowed = brackets.allowance([30.0], [0.0], "cuda")
    reported = [0.9] * 20
    spent = [20_000.0] * 20  # 20 ms of work reported as 0.9 us
    why = brackets.unaccounted(reported, spent, [0] * 20, allowed)
    assert why is not None and "the judge's clock" in why


def test_a_fraction_of_the_time_is_named_on_the_cpu():
    """A single-threaded 20 ms call reported as a quarter of it: the job's CPU time over one core shows the rest."""
    allowed = brackets.allowance([50.0], [0.0], "cpu")
    spent = [brackets.spent(bracket_us=20_100.0, cpu_us=20_000.0)] * 20
    assert spent[0] == 20_000.0
    assert brackets.unaccounted([5_000.0] * 20, spent, [0] * 20, allowed) is not None
    assert brackets.unaccounted([19_900.0] * 20, spent, [0] * 20, allowed) is None


def test_reaped_childrens_ticks_count_as_the_shapes_mean_per_call():
    """A child doing 4 ms per call, reaped: its time arrives as a 10 ms tick in 4 calls of 10 and nothing in the
    others, so the median call shows none of it; spread over the shape's calls, every call carries its 4 ms."""
    allowed = brackets.allowance([300.0], [0.0], "cpu")
    reaped = [10_000.0 if call % 5 in (1, 3) else 0.0 for call in range(20)]
    spent = [500.0 + tick for tick in reaped]
    reported = [5.0] * 20
    assert brackets.unaccounted(reported, spent, [0] * 20, allowed) is None  # the median of calls alone
    assert brackets.unaccounted(reported, spent, [0] * 20, allowed, reaped) is not None
    honest = [4_500.0] * 20
    assert brackets.unaccounted(honest, spent, [0] * 20, allowed, reaped) is None
    assert brackets.unaccounted(reported, [500.0] * 20, [0] * 20, allowed, [0.0] * 20) is None


def test_spent_is_cpu_time_over_the_cores_really_used():
    assert brackets.spent(1000.0, None) == 1000.0  # CUDA: the bracket
    assert brackets.spent(1000.0, 400.0) == 400.0  # waited for a core: the wait does not count
    assert brackets.spent(1000.0, 3800.0) == 1000.0  # four busy cores: the wall is the time


def test_bytes_are_allowed_for_at_the_judges_own_speed():
    allowed = brackets.allowance([10.0], [0.0], "cuda", us_per_byte=0.01)
    reported, spent = [100.0] * 5, [100.0 + 10.0 + 2000.0] * 5  # 2 ms moving 200 kB
    assert brackets.unaccounted(reported, spent, [200_000] * 5, allowed) is None
    assert brackets.unaccounted(reported, spent, [0] * 5, allowed) is not None


def test_moved_bytes_count_a_views_extent_not_its_storage():
    buffer = torch.zeros(16 * 2**20)  # 64 MiB
    assert brackets.moved_bytes(buffer[:4]) == 16
    assert brackets.moved_bytes({"output": buffer[8:12], "inputs": (buffer[10:14], torch.ones(3))}) == 24 + 12
    assert brackets.moved_bytes(buffer[::1024][:4]) == (3 * 1024 + 1) * 4  # a strided view spans its range
    assert brackets.moved_bytes([buffer[:0], None, 3]) == 0
    assert brackets.moved_bytes(buffer) == 64 * 2**20
    assert brackets.moved_bytes(torch.empty(8, device="meta")) == 0  # not on the host: not through the socket


def test_allowance_needs_matching_samples():
    with pytest.raises(ValueError):
        brackets.allowance([], [], "cpu")
    with pytest.raises(ValueError):
        brackets.allowance([1.0], [1.0, 2.0], "cpu")
    with pytest.raises(ValueError):
        brackets.allowance([1.0], [1.0], "cpu", us_per_byte=-1.0)


def test_on_the_cpu_the_busiest_thread_and_all_cores_bound_the_call():
    # one thread busy for 800 us beside an exchange of 100: the thread bounds the wall time, whatever the cores
    assert brackets.cpu_spent(total_us=900.0, longest_us=800.0, cores=16.0) == 800.0
    # the same work over 16 threads of 50 us, on a job that may use 4 cores: at least a quarter of it
    assert brackets.cpu_spent(total_us=900.0, longest_us=60.0, cores=4.0) == pytest.approx(225.0)
    assert brackets.cpu_spent(total_us=0.0, longest_us=-1.0, cores=0.0) == 0.0


def test_on_the_cpu_threads_that_take_turns_count_up_to_the_wall():
    # 6 ms of work relayed over two threads, one after the other, in a 6.1 ms bracket: it looked like 3 ms of two
    # parallel threads; the wall says it was serial
    assert brackets.cpu_spent(total_us=6000.0, longest_us=3000.0, cores=2.0, wall_us=6100.0) == 6000.0
    # two threads side by side, 3 ms each in a 3.1 ms bracket: the wall caps the bound at what really passed
    assert brackets.cpu_spent(total_us=6000.0, longest_us=3000.0, cores=2.0, wall_us=3100.0) == 3100.0


def test_a_shapes_own_calibration_is_its_allowance():
    allowed = brackets.allowance([30.0], [0.0], "cpu", us_per_byte=0.001)
    key = brackets.shape_key({"size": 512, "seed": 7})
    assert key == brackets.shape_key({"seed": 99, "size": 512})  # the seed is not part of a shape
    shaped = dataclasses.replace(allowed, shapes={key: (120.0, 4000)})
    assert shaped.of(4000, key) == pytest.approx(120.0)
    assert shaped.of(6000, key) == pytest.approx(122.0)  # bytes beyond the calibration's, at the measured rate
    assert shaped.of(1000, brackets.shape_key({"size": 8})) == pytest.approx(31.0)  # no calibration of its own


def test_the_slack_is_wider_where_host_bytes_cross_the_socket():
    reported, spent = [100.0] * 20, [100.0 + 30.0 + 1000.0] * 20  # 1 ms unexplained per call
    by_memory = brackets.allowance([30.0], [0.0], "cpu")
    assert brackets.unaccounted(reported, spent, [0] * 20, by_memory) is not None
    assert brackets.unaccounted(reported, spent, [0] * 20, dataclasses.replace(by_memory, via_socket=True)) is None
