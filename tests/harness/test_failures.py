"""Every way a submission can go wrong ends as one structured failure: right kind, clear message, log tail."""

from __future__ import annotations

import dataclasses

import pytest

from harness import FailureKind, Mode, Status
from harness.host.assembly import LOG_LIMIT_BYTES


def _failed(result, kind: FailureKind, status: Status):
    assert result.failure is not None, result.to_json()
    assert (result.failure.kind, result.status) == (kind, status), result.failure
    assert result.score_us is None
    return result.failure


def test_syntax_error_names_the_line(harness_server, make_job):
    job = make_job("correct")
    job.submission_source = "import torch\n\n\ndef custom_kernel(data)\n    return data[0]\n"
    failure = _failed(harness_server.evaluate(job), FailureKind.SYNTAX_ERROR, Status.ERROR)
    assert "line 4" in failure.message
    assert "SyntaxError" in failure.log_tail


def test_missing_entry_point(evaluate_fixture):
    failure = _failed(evaluate_fixture("no_entry_point"), FailureKind.MISSING_ENTRY_POINT, Status.ERROR)
    assert "custom_kernel" in failure.message


def test_import_error_shows_the_missing_module(evaluate_fixture):
    failure = _failed(evaluate_fixture("import_error"), FailureKind.IMPORT_ERROR, Status.ERROR)
    assert "kernelrank_module_that_does_not_exist" in failure.message
    assert "ModuleNotFoundError" in failure.log_tail


def test_exception_in_custom_kernel_points_at_the_submission(evaluate_fixture):
    result = evaluate_fixture("raises")
    failure = _failed(result, FailureKind.EXCEPTION, Status.ERROR)
    assert "ValueError: this kernel gave up" in failure.message
    assert "test 1 of 3" in failure.message
    assert "submission.py" in failure.log_tail
    assert "harness/judge/modes.py" not in failure.log_tail  # the user's traceback, not ours
    assert [t.passed for t in result.tests] == [False, False, False]


def test_wrong_output_fails_every_test_with_the_checkers_message(evaluate_fixture):
    result = evaluate_fixture("wrong_output")
    failure = _failed(result, FailureKind.WRONG_OUTPUT, Status.FAILED)
    assert failure.message.startswith("3 of 3 tests failed")
    assert all(not t.passed and "mismatched elements" in t.message for t in result.tests)


def test_a_tensor_subclass_is_not_an_output(evaluate_fixture):
    failure = _failed(evaluate_fixture("wrong_type"), FailureKind.BAD_OUTPUT_TYPE, Status.FAILED)
    assert "LazyTensor" in failure.message and "plain torch.Tensor" in failure.message


def test_wrong_shape_breaks_the_strict_output_rule(evaluate_fixture):
    failure = _failed(evaluate_fixture("wrong_shape"), FailureKind.BAD_OUTPUT_TYPE, Status.FAILED)
    assert "strict-output rule" in failure.message and "checker was not consulted" in failure.message
    assert "shape (126,)" in failure.message and "(127,)" in failure.message


def test_without_strict_output_the_checker_judges_the_shape(evaluate_fixture):
    result = evaluate_fixture("wrong_shape", task={"strict_output": False})
    failure = _failed(result, FailureKind.WRONG_OUTPUT, Status.FAILED)
    assert "the problem's checker rejected it: SIZE MISMATCH" in failure.message


def test_nan_the_checker_catches_is_the_checkers_verdict(evaluate_fixture):
    failure = _failed(evaluate_fixture("nan_output"), FailureKind.WRONG_OUTPUT, Status.FAILED)
    assert "the problem's checker rejected it: Number of mismatched elements: 1" in failure.message


def test_input_mutation_fails_even_with_the_right_answer(evaluate_fixture):
    failure = _failed(evaluate_fixture("mutates_input"), FailureKind.WRONG_OUTPUT, Status.FAILED)
    assert "inputs-unchanged rule (the problem's checker accepted the output)" in failure.message
    assert "custom_kernel changed data[0]" in failure.message


def test_segfault_is_a_crash_with_the_python_stack(evaluate_fixture):
    failure = _failed(evaluate_fixture("segfault"), FailureKind.CRASH, Status.ERROR)
    assert "SIGSEGV" in failure.message and "test 1 of 3" in failure.message
    assert "Segmentation fault" in failure.log_tail


def test_exit_with_a_fake_passed_line_is_a_crash(evaluate_fixture):
    result = evaluate_fixture("exit_early", Mode.RANKED)
    failure = _failed(result, FailureKind.CRASH, Status.ERROR)
    assert "exited with code 0" in failure.message
    assert "check: pass" in result.stdout  # printed, and ignored: results never come from stdout


def test_one_huge_allocation_is_out_of_memory(evaluate_fixture):
    failure = _failed(evaluate_fixture("memory_hog", memory_limit_mb=1024), FailureKind.OUT_OF_MEMORY, Status.ERROR)
    assert "out of memory" in failure.message


def test_slowly_growing_memory_is_stopped_by_the_watchdog(evaluate_fixture):
    failure = _failed(evaluate_fixture("memory_creep", memory_limit_mb=700), FailureKind.OUT_OF_MEMORY, Status.ERROR)
    assert "more than 700 MB of host memory" in failure.message


def test_infinite_loop_times_out(evaluate_fixture):
    result = evaluate_fixture("infinite_loop", task={"test_timeout": 2.0})
    failure = _failed(result, FailureKind.TIMEOUT, Status.TIMEOUT)
    assert "test phase did not finish within its 2 s limit (the problem's test_timeout)" in failure.message
    assert "testing 1 of 3" in failure.message
    assert result.wall_s < 30


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "limits", "words"),
    [
        (
            Mode.TEST,
            {"test_timeout": 3.0},
            "test phase did not finish within its 3 s limit (the problem's test_timeout)",
        ),
        (Mode.BENCHMARK, {"benchmark_timeout": 3.0}, "benchmark phase did not finish within its 3 s limit"),
    ],
)
def test_a_hung_call_reports_that_it_still_runs_and_stops_at_its_phase_limit(
    make_job, monkeypatch, mode, limits, words
):
    from harness import HarnessServer

    monkeypatch.setenv("KERNELRANK_PROGRESS_EVERY_S", "0.5")  # a server of its own reads the interval
    seen = []
    with HarnessServer() as server:
        result = server.evaluate(make_job("infinite_loop", mode, task=limits), on_progress=seen.append)
    failure = _failed(result, FailureKind.TIMEOUT, Status.TIMEOUT)
    assert words in failure.message
    assert any("still running after" in p.detail and "limit 3 s" in p.detail for p in seen), seen


def test_output_flood_is_stopped_and_the_log_is_capped(evaluate_fixture):
    result = evaluate_fixture("output_flood")
    _failed(result, FailureKind.OUTPUT_FLOOD, Status.ERROR)
    assert len(result.stdout.encode()) < LOG_LIMIT_BYTES + 100
    assert "bytes cut" in result.stdout


def test_a_cuda_only_submission_is_refused_on_cpu(evaluate_fixture):
    failure = _failed(evaluate_fixture("requires_cuda"), FailureKind.UNSUPPORTED_DEVICE, Status.ERROR)
    assert "requires CUDA" in failure.message


def test_a_problem_without_cpu_support_is_refused_on_cpu(evaluate_fixture):
    failure = _failed(
        evaluate_fixture("correct", task={"devices": ["cuda"]}), FailureKind.UNSUPPORTED_DEVICE, Status.ERROR
    )
    assert "runs on cuda, not on cpu" in failure.message


def test_a_cu_file_for_a_python_problem_is_refused(harness_server, make_job):
    job = make_job("correct")
    job.submission_name = "kernel.cu"
    failure = _failed(harness_server.evaluate(job), FailureKind.UNSUPPORTED, Status.ERROR)
    assert "takes Python submissions" in failure.message and "lang: cu problems" in failure.message


def test_a_cuda_problem_is_refused_on_cpu(harness_server, make_job):
    job = make_job("correct")
    job.problem = dataclasses.replace(job.problem, task=dataclasses.replace(job.problem.task, lang="cu"))
    failure = _failed(harness_server.evaluate(job), FailureKind.UNSUPPORTED_DEVICE, Status.ERROR)
    assert "CUDA leaderboard" in failure.message


def test_a_broken_reference_blames_the_problem(harness_server, make_job):
    job = make_job("correct")
    job.problem = dataclasses.replace(job.problem, files={**job.problem.files, "reference.py": "raise RuntimeError"})
    failure = _failed(harness_server.evaluate(job), FailureKind.INVALID_PROBLEM, Status.ERROR)
    assert "reference.py failed to import" in failure.message


@pytest.mark.cuda
def test_illegal_memory_access_is_a_cuda_error(evaluate_fixture):
    _failed(evaluate_fixture("illegal_access", device="cuda"), FailureKind.CUDA_ERROR, Status.ERROR)


@pytest.mark.cuda
def test_work_on_a_side_stream_is_withheld(evaluate_fixture):
    result = evaluate_fixture("side_stream", Mode.BENCHMARK, device="cuda")
    _failed(result, FailureKind.ESCAPED_TIMING, Status.FAILED)
    assert "escaped_timing" in result.shapes[0].flags
