"""The four modes on the real harness (CPU): what each runs, checks, times and reports."""

from __future__ import annotations

import dataclasses
import math

import pytest

from harness import EvalResult, FailureKind, Mode, Status


def _passed(result: EvalResult) -> EvalResult:
    assert result.status is Status.PASSED, result.failure
    assert result.failure is None
    return result


def test_test_mode_reports_every_test(evaluate_fixture, problem):
    result = _passed(evaluate_fixture("correct", Mode.TEST))
    assert [t.spec for t in result.tests] == problem.task.tests
    assert all(t.passed and t.message == "" for t in result.tests)
    assert result.shapes == [] and result.score_us is None
    assert result.system.device == "cpu" and result.system.torch


@pytest.mark.parametrize("mode", [Mode.BENCHMARK, Mode.RANKED])
def test_timed_modes_time_every_cpu_shape_and_score_them(evaluate_fixture, problem, mode):
    result = _passed(evaluate_fixture("correct", mode))
    assert [s.spec for s in result.shapes] == problem.task.benchmarks_for("cpu")
    for shape in result.shapes:
        assert shape.n == len(shape.samples_us) >= 20
        assert shape.min_us <= shape.p10_us <= shape.median_us <= shape.p90_us <= shape.max_us
        assert shape.first_call_us > 0 and shape.stop_reason in ("converged", "budget", "cap")
        assert shape.achieved_gbps is not None and shape.achieved_gbps > 0  # the fixture declares a roofline
    medians = [s.median_us for s in result.shapes]
    assert result.score_us == pytest.approx(math.exp(sum(map(math.log, medians)) / len(medians)))
    assert len(result.tests) == (len(problem.task.tests) if mode is Mode.RANKED else 0)


def test_timed_modes_report_diagnostics_and_where_the_time_went(evaluate_fixture):
    result = _passed(evaluate_fixture("correct", Mode.RANKED))
    for shape in result.shapes:
        assert len(shape.warmup_us) >= 5 and all(w > 0 for w in shape.warmup_us)
        assert shape.clock_mhz is None and shape.flush_us is None  # CUDA-only readings
        assert shape.host_us == shape.median_us  # a CPU call is all host time
        assert shape.address_spread is None or shape.address_spread >= 0
    assert {"prepare", "tests", "gate", "warm-up", "timing", "timing: calls", "timing: checks"} <= set(result.phases_s)
    assert sum(v for k, v in result.phases_s.items() if ":" not in k) <= result.wall_s
    assert result.compile_s == 0


@pytest.mark.parametrize("declared", [True, False], ids=["devices declared", "as written"])
def test_only_problems_declaring_devices_get_a_default_device(harness_server, make_job, declared):
    job = make_job("correct", Mode.TEST, task={"default_device": declared})
    spy = (
        "\nimport torch.overrides\n_generate = generate_input\n\n"
        "def generate_input(**spec):\n"
        "    print('modes:', [type(m).__name__ for m in torch.overrides._get_current_function_mode_stack()])\n"
        "    return _generate(**spec)\n"
    )
    job.problem = dataclasses.replace(
        job.problem, files={**job.problem.files, "reference.py": job.problem.files["reference.py"] + spy}
    )
    result = _passed(harness_server.evaluate(job))
    modes = [line for line in result.stdout.splitlines() if line.startswith("modes:")]
    assert modes and all(("DeviceContext" in line) == declared for line in modes)


def test_profile_mode_gives_a_table_per_shape(evaluate_fixture, problem):
    result = _passed(evaluate_fixture("correct", Mode.PROFILE))
    assert [p.spec for p in result.profiles] == problem.task.benchmarks_for("cpu")
    assert all("aten::add" in p.table for p in result.profiles)


def _fingerprints(result: EvalResult) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.split()[0].isdigit()]


def test_no_timed_input_is_ever_seen_twice(evaluate_fixture):
    result = _passed(evaluate_fixture("input_spy", Mode.BENCHMARK))
    seen = _fingerprints(result)
    assert len(seen) >= sum(s.n for s in result.shapes) and len(set(seen)) == len(seen)


def test_ranked_inputs_are_secret_not_the_public_ones(evaluate_fixture):
    public = set(_fingerprints(_passed(evaluate_fixture("input_spy", Mode.BENCHMARK))))
    public |= set(_fingerprints(_passed(evaluate_fixture("input_spy", Mode.TEST))))
    ranked = _fingerprints(_passed(evaluate_fixture("input_spy", Mode.RANKED, secret_seed=12345)))
    assert ranked and public.isdisjoint(ranked)


@pytest.mark.parametrize("mode", [Mode.BENCHMARK, Mode.RANKED, Mode.PROFILE])
def test_benchmark_shapes_are_checked_in_every_timed_mode(evaluate_fixture, mode):
    assert _passed(evaluate_fixture("shape_cheat", Mode.TEST))  # only the large shapes take the shortcut
    result = evaluate_fixture("shape_cheat", mode)
    assert (result.status, result.failure.kind) == (Status.FAILED, FailureKind.WRONG_OUTPUT)
    assert "benchmark shape 1 of 2" in result.failure.message


def test_ranked_stops_at_failing_tests_before_timing(evaluate_fixture):
    result = evaluate_fixture("wrong_output", Mode.RANKED)
    assert result.failure.kind is FailureKind.WRONG_OUTPUT
    assert result.tests and result.shapes == []


def test_progress_events_follow_the_run(harness_server, make_job):
    seen = []
    result = harness_server.evaluate(make_job("correct", Mode.RANKED), on_progress=seen.append)
    _passed(result)
    stages = [(p.stage, p.index) for p in seen]
    assert stages[0] == ("starting", 0)
    assert [s for s in stages if s[0] == "testing"] == [("testing", 1), ("testing", 2), ("testing", 3)]
    assert stages[-2:] == [("warming", 2), ("timing", 2)]


def test_results_round_trip_through_json(evaluate_fixture):
    for result in (evaluate_fixture("correct", Mode.RANKED), evaluate_fixture("raises", Mode.TEST)):
        assert EvalResult.from_json(result.to_json()) == result
