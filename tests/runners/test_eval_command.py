"""``kernelrank eval``: the report or JSON on stdout, exit code 0 only when the evaluation passed."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from harness import EvalResult, Status
from harness.result import Mode, ProfileEntry, ReportFile
from runners import eval_command
from runners.eval_command import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "harness"
PROBLEM = str(FIXTURES / "vectoradd")


def _submission(name: str) -> str:
    return str(FIXTURES / "submissions" / f"{name}.py")


@pytest.mark.slow
def test_a_passing_submission_prints_the_report_and_exits_0(capsys) -> None:
    assert main([_submission("correct"), "--problem", PROBLEM, "--device", "cpu", "--mode", "benchmark"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vectoradd · benchmark · PASSED") and "score " in out and "first call" in out


def test_a_failing_submission_prints_json_and_exits_1(capsys) -> None:
    assert main([_submission("wrong_output"), "--problem", PROBLEM, "--device", "cpu", "--json"]) == 1
    result = EvalResult.from_json(capsys.readouterr().out)
    assert result.status is Status.FAILED and len(result.tests) == 3


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["missing.py", "--problem", PROBLEM], "cannot read missing.py"),
        ([_submission("correct"), "--problem", "no/such/problem"], "does not exist"),
        ([_submission("correct"), "--problem", PROBLEM, "--mode", "fast"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_sentence(capsys, argv, words) -> None:
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_profile_mode_saves_the_attached_ncu_reports(tmp_path, monkeypatch, capsys) -> None:
    report = b"NVIDIA Nsight Compute report bytes"
    profiled = EvalResult(
        status=Status.PASSED,
        mode=Mode.PROFILE,
        problem="vectoradd",
        profiles=[
            ProfileEntry(
                spec={"size": 8},
                table="k  1.0 us",
                tool="ncu",
                report=ReportFile("shape0.ncu-rep", base64.b64encode(report).decode(), len(report)),
            )
        ],
    )
    monkeypatch.setattr(eval_command, "evaluate", lambda job, on_progress=None: profiled)
    folder = tmp_path / "reports"
    assert main([_submission("correct"), "--problem", PROBLEM, "--mode", "profile", "--reports", str(folder)]) == 0
    (saved,) = folder.iterdir()
    assert saved.name.endswith("-shape0.ncu-rep") and saved.read_bytes() == report
    assert f"saved to {saved}" in capsys.readouterr().err


AUTHOR = Path(__file__).resolve().parents[1] / "fixtures" / "author_eval"


@pytest.mark.slow
def test_a_problem_with_its_own_evaluator_runs_through_kernelrank_eval(capsys) -> None:
    problem = str(AUTHOR / "crossentropy")
    assert main([str(AUTHOR / "solutions" / "correct.py"), "--problem", problem, "--mode", "ranked"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("crossentropy · ranked · PASSED") and "problem's own evaluator" in out
    assert "geometric mean of 2 shape means" in out
    assert main([str(AUTHOR / "solutions" / "wrong.py"), "--problem", problem, "--json"]) == 1
    result = EvalResult.from_json(capsys.readouterr().out)
    assert result.measured_by == "author_evaluator" and "differs from the reference's" in result.failure.message
