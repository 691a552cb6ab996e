"""``kernelrank eval``: the report or JSON on stdout, exit code 0 only when the evaluation passed."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest
import torch

from harness import EvalResult, Status
from harness.result import Mode, ProfileEntry, ReportFile
from runners import eval_command
from runners.eval_command import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "harness"
PROBLEM = str(FIXTURES / "vectoradd")


@pytest.fixture(autouse=True)
def log_file(tmp_path, monkeypatch) -> Path:
    """The harness's log of each test's evaluations, instead of the user's state folder."""
    path = tmp_path / "state" / "eval.log"
    monkeypatch.setattr(eval_command, "LOG", path)
    return path


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
    monkeypatch.setattr(eval_command, "evaluate", lambda job, on_progress=None, log=None: profiled)
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


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU these examples run")
@pytest.mark.parametrize("example", ["triton_add", "jax_add", "cuda_inline"])
def test_a_cuda_only_example_on_the_cpu_says_so_in_one_sentence(capfd, example) -> None:
    """Issue 26: the right sentence used to be followed by a runner's traceback ("no timer for device 'None'")."""
    submission = ROOT / "problems" / "vectoradd" / "solutions" / "correct" / f"{example}.py"
    assert main([str(submission), "--problem", str(ROOT / "problems" / "vectoradd")]) == 1
    shown = "".join(capfd.readouterr())
    assert "requires CUDA" in shown and "Traceback" not in shown and "no timer" not in shown, shown


def test_a_kernel_that_never_returns_says_so_and_keeps_harness_logs_off_the_terminal(
    tmp_path, monkeypatch, capfd, log_file
) -> None:
    problem = tmp_path / "vectoradd"
    shutil.copytree(FIXTURES / "vectoradd", problem)
    task = problem / "task.yml"
    task.write_text(task.read_text().replace("test_timeout: 30", "test_timeout: 6"))
    monkeypatch.setenv("KERNELRANK_PROGRESS_EVERY_S", "2")
    assert main([_submission("infinite_loop"), "--problem", str(problem), "--device", "cpu"]) == 1
    out, err = capfd.readouterr()
    assert "still running after" in err and "limit 6 s" in err, err
    assert "harness-server" not in out + err and "WARNING" not in out + err, out + err
    assert "timeout" in out.lower()
    assert log_file.is_file()


def test_a_named_tuple_reference_passes_through_kernelrank_eval(tmp_path, capsys) -> None:
    """The public-style qr problem: its reference submission returns torch.geqrf's named tuple, which its
    checker must see as a tuple (issue 26). Copied with the CPU added to its devices, as GPU MODE's format is
    CUDA-only."""
    conformance = ROOT / "tests" / "conformance"
    shutil.copytree(conformance / "problems", tmp_path / "problems")
    task = tmp_path / "problems" / "qr_py" / "task.yml"
    task.write_text(task.read_text() + "devices: [cpu, cuda]\n")
    solution = conformance / "solutions" / "qr_py" / "correct" / "geqrf.py"
    argv = [str(solution), "--problem", str(task.parent), "--device", "cpu"]
    assert main(argv) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.startswith("qr_py · test · PASSED")
