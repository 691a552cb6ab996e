"""The shipped problems are complete and well-formed: they load, document themselves and ship fixtures."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from problem_testkit import COMPAT_PROBLEM, PROBLEM_DIRS, PROBLEMS, python_sources, solutions

from harness.device import peaks_for
from harness.loading import load_problem
from harness.problem import SUBMISSION_MARK
from harness.roofline import evaluate_expr

L2_BYTES = 50 * 2**20  # an H100's L2
CPU_WORKING_SET = (64 * 2**10, 16 * 2**20)
TEST_WORKING_SET_MAX = 2 * 2**20
GPU_MODE_KEYS = {
    "files",
    "lang",
    "description",
    "config",
    "templates",
    "tests",
    "benchmarks",
    "test_timeout",
    "benchmark_timeout",
    "ranked_timeout",
    "ranking_by",
    "seed",
    "multi_gpu",
}
PEAK_DTYPES = set(peaks_for("NVIDIA H100 80GB HBM3").tflops)
OURS = [folder for folder in PROBLEM_DIRS if folder.name != COMPAT_PROBLEM]


def _ids(folders: list[Path]) -> list[str]:
    return [folder.name for folder in folders]


def test_every_problem_of_issue_2_is_shipped() -> None:
    expected = {
        "identity",
        "vectoradd",
        "vectorsum",
        "softmax",
        "grayscale",
        "matmul",
        "prefixsum",
        "histogram",
        COMPAT_PROBLEM,
    }
    assert expected <= {folder.name for folder in PROBLEM_DIRS}


@pytest.mark.parametrize("folder", PROBLEM_DIRS, ids=_ids(PROBLEM_DIRS))
def test_problem_loads_with_its_files(folder: Path) -> None:
    problem = load_problem(folder)

    assert problem.name == folder.name
    assert problem.submission_name == "submission.py"
    assert {"reference.py", "task.py", "utils.py"} <= set(problem.files)
    assert problem.files["utils.py"] == (PROBLEMS / "utils.py").read_text()
    assert problem.task.lang == "py" and problem.task.description.strip()
    assert "Python" in problem.templates


@pytest.mark.parametrize("folder", PROBLEM_DIRS, ids=_ids(PROBLEM_DIRS))
def test_problem_has_readme_and_fixtures(folder: Path) -> None:
    problem = load_problem(folder)
    correct = [s for s in solutions("correct") if s.problem == folder.name]
    wrong = [s for s in solutions("wrong") if s.problem == folder.name]

    assert f"kernelrank submit solution.py --leaderboard {folder.name}" in problem.readme
    assert len(correct) >= 2 and len(wrong) >= 2
    assert any(not s.requires_cuda for s in correct), "a CPU machine must be able to check one correct solution"


@pytest.mark.parametrize("path", python_sources(), ids=lambda path: str(path.relative_to(PROBLEMS)))
def test_source_compiles_and_defines_custom_kernel(path: Path) -> None:
    """CUDA-only files cannot run here; at least they parse and provide the entry point."""
    tree = ast.parse(path.read_text(), filename=str(path))

    assert any(isinstance(node, ast.FunctionDef) and node.name == "custom_kernel" for node in tree.body)


@pytest.mark.parametrize("folder", OURS, ids=_ids(OURS))
def test_problem_runs_on_cpu_and_cuda_with_a_roofline(folder: Path) -> None:
    task = load_problem(folder).task

    assert task.devices == ["cpu", "cuda"] and task.default_device
    assert task.strict_output, "our problems ask for the reference's exact output (strict_output: true)"
    assert task.ranking_by == "geom"
    assert task.roofline is not None and task.roofline.dtype in PEAK_DTYPES
    for spec in task.tests + task.benchmarks + (task.cpu_benchmarks or []):
        assert evaluate_expr(task.roofline.bytes, spec) > 0
        assert evaluate_expr(task.roofline.flops, spec) >= 0


@pytest.mark.parametrize("folder", OURS, ids=_ids(OURS))
def test_shapes_fit_their_purpose(folder: Path) -> None:
    """Tests small, CPU benchmarks of a few MB at most, CUDA benchmarks well beyond the L2 cache."""
    task = load_problem(folder).task
    moved = lambda spec: evaluate_expr(task.roofline.bytes, spec)

    assert all(moved(spec) <= TEST_WORKING_SET_MAX for spec in task.tests)
    assert task.cpu_benchmarks and all(
        CPU_WORKING_SET[0] <= moved(s) <= CPU_WORKING_SET[1] for s in task.cpu_benchmarks
    )
    assert 3 <= len(task.benchmarks) <= 5
    assert max(moved(spec) for spec in task.benchmarks) >= 4 * L2_BYTES
    assert all(isinstance(spec.get("seed"), int) for spec in task.tests + task.benchmarks + task.cpu_benchmarks)


def test_compat_problem_keeps_the_public_format() -> None:
    folder = PROBLEMS / COMPAT_PROBLEM
    raw = yaml.safe_load((folder / "task.yml").read_text())
    problem = load_problem(folder)

    assert set(raw) <= GPU_MODE_KEYS, "no kernelrank extension keys in the compatibility fixture"
    assert raw["config"]["main"] == "eval.py"
    assert {"name": "eval.py", "source": "../eval.py"} in raw["files"]
    assert {"name": "submission.py", "source": SUBMISSION_MARK} in raw["files"]
    assert all(isinstance(spec, dict) for spec in raw["tests"] + raw["benchmarks"])
    assert "eval.py" not in problem.files  # GPU MODE's evaluator is replaced by our harness
    assert problem.task.ranking_by == "last" and problem.task.devices == ["cuda"]
    assert not problem.task.default_device and not problem.task.strict_output  # it runs as written
    assert problem.task.roofline is None and problem.task.cpu_benchmarks is None
