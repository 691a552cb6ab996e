"""Public-format problems run as their authors wrote them: the problem's checker decides correctness.

Each conformance problem covers patterns of GPU MODE's format (see its task.yml): output buffers inside
the input that the reference ignores or writes, a float64 reference with a tolerance checker, a scalar
result as () or (1,), host-side inputs from a CPU generator, checkers answering a string, a bool, a tuple
or a list of reasons, torch.compile with CUDA graphs, and the first format's lone reference.py. Every
solution goes through the real harness in ranked mode (tests, then every benchmark shape): correct ones
must pass, wrong ones must fail with the kind and the words their header names.

The public format is CUDA-only by default, and this machine may have no GPU: on the CPU the suite lets
these problems run there (``devices``) without giving them a default device, so they still run exactly as
written; their references pick CUDA when there is one, as GPU MODE's ``get_device`` helper does.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest
import torch
import yaml
from conformance_kit import GPU_MODE_KEYS, PROBLEMS, Solution, problem_folders, solutions

from core.service.leaderboards import load_new_problems
from harness import EvalJob, EvalResult, FailureKind, HarnessServer, Mode, Problem, Status, load_problem
from harness.first_format import TEST_SEEDS
from harness.problem import CHECKER_ARGS
from storage.store import Store

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
SHAPE_BUDGET_MS = 20.0  # verdicts, not timings: the stop rule's minimum of samples per shape is enough


def _runnable_here(problem: Problem) -> Problem:
    task = dataclasses.replace(problem.task, shape_budget_ms=SHAPE_BUDGET_MS)
    if DEVICE == "cpu":
        task = dataclasses.replace(task, devices=["cpu", "cuda"])  # default_device stays off: as written
    return dataclasses.replace(problem, task=task)


def _evaluate(harness: HarnessServer, problem: Problem, source: str, mode: Mode = Mode.RANKED) -> EvalResult:
    job = EvalJob(
        problem=problem,
        submission_name=problem.submission_name,
        submission_source=source,
        mode=mode,
        device=DEVICE,
        secret_seed=20261121,
    )
    return harness.evaluate(job)


def _explain(result: EvalResult) -> str:
    failure = result.failure
    return (
        f"status {result.status.value}; {failure.kind.value}: {failure.message}\n{failure.log_tail}"
        if failure
        else f"status {result.status.value}"
    ) + f"\nstderr: {result.stderr[-2000:]}"


NEEDS_CUDA = [pytest.mark.cuda, pytest.mark.skipif(DEVICE != "cuda", reason="needs a CUDA GPU")]


def _marked(items: list[Solution]) -> list:
    return [pytest.param(s, id=s.id, marks=NEEDS_CUDA if s.requires_cuda else []) for s in items]


@pytest.mark.slow
@pytest.mark.parametrize("solution", _marked([s for s in solutions() if s.correct]))
def test_correct_solution_passes(solution: Solution, harness_server: HarnessServer) -> None:
    problem = _runnable_here(load_problem(PROBLEMS / solution.problem))
    result = _evaluate(harness_server, problem, solution.source)

    assert result.status is Status.PASSED, _explain(result)
    assert len(result.tests) == len(problem.task.tests) and all(t.passed for t in result.tests)
    assert [s.spec for s in result.shapes] == problem.task.benchmarks_for(DEVICE)
    assert result.score_us is not None and result.score_us > 0


@pytest.mark.parametrize("solution", _marked([s for s in solutions() if not s.correct]))
def test_wrong_solution_fails_for_the_right_reason(solution: Solution, harness_server: HarnessServer) -> None:
    kind, words = solution.expected
    result = _evaluate(harness_server, _runnable_here(load_problem(PROBLEMS / solution.problem)), solution.source)

    assert result.status is Status.FAILED, _explain(result)
    assert result.failure.kind is FailureKind(kind), _explain(result)
    assert words in result.failure.message, _explain(result)
    assert result.score_us is None


@pytest.mark.parametrize("folder", [f for f in problem_folders() if (f / "task.yml").is_file()], ids=lambda f: f.name)
def test_problem_keeps_the_public_format_and_loads_as_written(folder) -> None:
    raw = yaml.safe_load((folder / "task.yml").read_text())
    problem = load_problem(folder)

    assert set(raw) <= GPU_MODE_KEYS, "a conformance problem uses GPU MODE's keys only"
    assert raw["config"]["main"] == "eval.py" and {"name": "eval.py", "source": "../eval.py"} in raw["files"]
    assert "eval.py" not in problem.files  # our harness replaces GPU MODE's evaluator
    assert problem.files["utils.py"] == (PROBLEMS / "utils.py").read_text()
    assert problem.templates["Python"] == (PROBLEMS / "template.py").read_text()
    assert problem.task.ranking_by == "last" and problem.task.devices == ["cuda"]
    assert not problem.task.default_device and not problem.task.strict_output
    assert problem.task.checker_args == CHECKER_ARGS[0]


def test_every_pattern_has_a_correct_and_a_wrong_solution() -> None:
    for folder in problem_folders():
        labels = {s.correct for s in solutions() if s.problem == folder.name}
        assert labels == {True, False}, folder.name
    assert all(s.expected for s in solutions() if not s.correct)


@pytest.mark.parametrize("path", ["folder", "file"])
def test_a_lone_reference_py_is_the_first_format(path: str) -> None:
    folder = PROBLEMS / "softmax_first_format"
    problem = load_problem(folder if path == "folder" else folder / "reference.py")

    assert problem.name == "softmax_first_format"
    assert set(problem.files) == {"reference.py"} and problem.submission_name == "submission.py"
    assert problem.task.checker_args == CHECKER_ARGS[1]
    assert [t["seed"] for t in problem.task.tests] == list(TEST_SEEDS) and len(problem.task.benchmarks) == 1
    assert problem.task.description.startswith("Softmax over the last dimension")


@pytest.mark.slow
def test_first_format_inputs_are_fresh_per_call_and_repeat_per_seed(harness_server: HarnessServer) -> None:
    spy = (
        "import hashlib, torch\n"
        "def custom_kernel(xs):\n"
        "    print(hashlib.sha1(xs[0].cpu().numpy().tobytes()).hexdigest())\n"
        "    return [torch.softmax(x, dim=-1) for x in xs]\n"
    )
    problem = _runnable_here(load_problem(PROBLEMS / "softmax_first_format"))
    first, second = (_evaluate(harness_server, problem, spy, Mode.TEST) for _ in range(2))

    assert first.passed, _explain(first)
    seen = first.stdout.split()
    assert len(seen) == len(TEST_SEEDS) == len(set(seen)) and second.stdout.split() == seen


@pytest.mark.skipif(DEVICE == "cuda", reason="checks the answer on a machine without CUDA")
def test_a_public_problem_on_a_cpu_only_machine_needs_cuda(harness_server: HarnessServer) -> None:
    problem = load_problem(PROBLEMS / "matmul_py")  # as written: CUDA only
    result = _evaluate(harness_server, problem, "def custom_kernel(data):\n    return data[0] @ data[1]\n")

    assert result.failure.kind is FailureKind.UNSUPPORTED_DEVICE, _explain(result)
    assert "needs CUDA" in result.failure.message and "GPU runner" in result.failure.message


@pytest.mark.skipif(DEVICE == "cuda", reason="checks the answer on a machine without CUDA")
def test_a_reference_that_insists_on_cuda_says_it_needs_cuda(harness_server: HarnessServer) -> None:
    problem = _runnable_here(load_problem(PROBLEMS / "matmul_py"))
    cuda_only = problem.files["reference.py"].replace("device = get_device()", 'device = torch.device("cuda")')
    problem = dataclasses.replace(problem, files={**problem.files, "reference.py": cuda_only})
    result = _evaluate(harness_server, problem, "def custom_kernel(data):\n    return data[0] @ data[1]\n")

    assert result.failure.kind is FailureKind.UNSUPPORTED_DEVICE, _explain(result)
    assert result.failure.message.startswith("This problem needs CUDA: its generate_input failed")


def test_a_first_format_folder_becomes_a_leaderboard_on_gpus(tmp_path) -> None:
    shutil.copytree(PROBLEMS / "softmax_first_format", tmp_path / "problems" / "softmax")
    with Store(tmp_path / "kernelrank.duckdb") as store:
        assert load_new_problems(store, tmp_path / "problems", ["CPU", "H100"]) == ["softmax"]
        board = store.get_leaderboard("softmax")
    assert board.gpus == ["H100"] and Problem.from_dict(board.problem).task.checker_args == CHECKER_ARGS[1]
