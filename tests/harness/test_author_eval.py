"""Problems that ship their own evaluator (tests/fixtures/author_eval): run through the real harness server,
fork and sandbox on the CPU, with the problem's eval.py reporting over POPCORN_FD."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import EvalJob, EvalResult, FailureKind, HarnessServer, Mode, Status, load_problem
from harness.popcorn import MEASURED_BY, Report, spec_lines, timings, verdicts
from harness.problem import ProblemError

AUTHOR = Path(__file__).resolve().parents[1] / "fixtures" / "author_eval"


def job(problem: str, solution: str, mode: Mode = Mode.TEST, **task: float) -> EvalJob:
    loaded = load_problem(AUTHOR / problem)
    for key, value in task.items():
        setattr(loaded.task, key, value)
    return EvalJob(
        problem=loaded,
        submission_name="submission.py",
        mode=mode,
        secret_seed=12345,
        submission_source=(AUTHOR / "solutions" / f"{solution}.py").read_text(),
    )


@pytest.fixture
def evaluate(harness_server: HarnessServer) -> Callable[..., EvalResult]:
    return lambda *args, **kwargs: harness_server.evaluate(job(*args, **kwargs))


def test_the_loader_stages_the_authors_evaluator_only_when_it_must_run() -> None:
    own = load_problem(AUTHOR / "crossentropy")
    assert own.author_evaluator == "eval.py" and "eval.py" in own.files
    standard = load_problem(Path(__file__).resolve().parents[1] / "conformance" / "problems" / "matmul_py")
    assert standard.author_evaluator is None and "eval.py" not in standard.files


def test_a_problem_neither_evaluator_can_run_is_refused_with_the_reason(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(AUTHOR / "crossentropy", folder)
    shutil.copy(AUTHOR / "common" / "reference.py", tmp_path / "reference.py")
    text = (folder / "task.yml").read_text().replace('  - {"name": "eval.py", "source": "../common/eval.py"}\n', "")
    (folder / "task.yml").write_text(text.replace("../common/reference.py", "../reference.py"))
    with pytest.raises(ProblemError, match="lacks generate_input, ref_kernel, check_implementation.*neither"):
        load_problem(folder)


def test_a_correct_solution_passes_the_authors_tests(evaluate) -> None:
    result = evaluate("crossentropy", "correct")
    assert result.status is Status.PASSED, result.failure
    assert result.measured_by == MEASURED_BY and [t.passed for t in result.tests] == [True, True]
    assert result.tests[1].spec == {"rows": 33, "classes": 100, "seed": 2}
    assert result.sandbox.description and result.score_us is None


@pytest.mark.parametrize("mode", [Mode.BENCHMARK, Mode.RANKED])
def test_timed_modes_score_by_the_problems_ranking_rule(evaluate, mode: Mode) -> None:
    result = evaluate("crossentropy", "correct", mode)
    assert result.status is Status.PASSED, result.failure
    assert len(result.shapes) == 2 and all(s.mean_us > 0 and s.n == 20 for s in result.shapes)
    geomean = (result.shapes[0].mean_us * result.shapes[1].mean_us) ** 0.5
    assert result.score_us == pytest.approx(geomean)
    if mode is Mode.RANKED:  # tests first, then the leaderboard run with the secret seed; specs stay public
        assert len(result.tests) == 2
        assert "mode leaderboard, secret seed given" in result.stdout
        assert [s.spec["seed"] for s in result.shapes] == [3, 4]
    else:
        assert "secret seed absent" in result.stdout


def test_profile_mode_shows_the_evaluators_reports(evaluate) -> None:
    result = evaluate("crossentropy", "correct", Mode.PROFILE)
    assert result.status is Status.PASSED, result.failure
    assert [p.table for p in result.profiles] == [
        "profile of rows: 64; classes: 128; seed: 3",
        "profile of rows: 128; classes: 256; seed: 4",
    ]


@pytest.mark.parametrize("mode", [Mode.TEST, Mode.RANKED])
def test_a_wrong_solution_fails_with_the_evaluators_message(evaluate, mode: Mode) -> None:
    result = evaluate("crossentropy", "wrong", mode)
    assert result.status is Status.FAILED and result.failure.kind is FailureKind.WRONG_OUTPUT
    assert "differs from the reference's" in result.failure.message and result.score_us is None
    assert not result.shapes  # a ranked run stops after the failed tests


def test_a_submission_that_kills_the_evaluator_is_a_crash(evaluate) -> None:
    result = evaluate("crossentropy", "crash")
    assert result.status is Status.ERROR and result.failure.kind is FailureKind.CRASH
    assert "killed by signal 6" in result.failure.message


def test_an_evaluator_that_never_writes_check_has_no_verdict(evaluate) -> None:
    result = evaluate("silent", "correct")
    assert result.status is Status.ERROR and "without writing a 'check' line" in result.failure.message
    assert [t.passed for t in result.tests] == [False]


def test_an_evaluator_that_crashes_shows_its_traceback(evaluate) -> None:
    result = evaluate("crashing", "correct")
    assert result.failure.kind is FailureKind.CRASH and "exited with status 1" in result.failure.message
    assert "ZeroDivisionError" in result.failure.log_tail


@pytest.mark.slow
def test_a_hung_call_says_so_and_stops_at_the_phase_limit(monkeypatch) -> None:
    monkeypatch.setenv("KERNELRANK_PROGRESS_EVERY_S", "0.5")
    seen = []
    with HarnessServer() as server:
        result = server.evaluate(job("crossentropy", "infinite", test_timeout=10), on_progress=seen.append)
    assert result.status is Status.TIMEOUT
    assert "test phase did not finish within its 10 s limit (the problem's test_timeout)" in result.failure.message
    if any(p.stage == "testing" for p in seen):  # the evaluator got to its first test (it imports torch first)
        assert "while testing 1 of 2 (rows=4, classes=8)" in result.failure.message
    assert any("still running after" in p.detail and "limit 10 s" in p.detail for p in seen), seen


def test_the_wire_format_both_ways() -> None:
    assert spec_lines([{"rows": 4, "seed": 1}, {"n": 2}]) == "rows: 4; seed: 1\nn: 2\n"
    report = Report()
    for chunk in (
        "test-count: 2\ntest.0.status: pa",
        "ss\ntest.1.status: fail\ntest.1.error: off by: 2\n",
        "benchmark.0.mean: 2500.0\nbenchmark.0.runs: 7\nbenchmark.1.status: fail\ncheck: fail\n",
    ):
        report.feed(chunk)
    assert [(t.passed, t.message) for t in verdicts(report, [{"a": 1}, {"a": 2}])] == [(True, ""), (False, "off by: 2")]
    timed, failed = timings(report, [{"a": 1}, {"a": 2}])
    assert [(s.mean_us, s.n) for s in timed] == [(2.5, 7)] and failed == ["benchmark 2 failed"]


def test_an_endless_line_or_too_many_lines_is_a_flood() -> None:
    endless, chatty = Report(), Report()
    endless.feed("x" * (2 << 20))
    chatty.feed("k: v\n" * 100_001)
    assert endless.flooded and chatty.flooded and not endless.partial


def test_an_authors_evaluator_leaves_the_servers_zygote_for_the_next_job(harness_server, make_job) -> None:
    """Its sweep of leftovers spares the zygote every other evaluation is forked from (it once killed it, and every
    later job on that server failed)."""
    assert harness_server.evaluate(job("crossentropy", "correct")).status is Status.PASSED
    after = harness_server.evaluate(make_job("correct"))
    assert after.status is Status.PASSED, after.failure
