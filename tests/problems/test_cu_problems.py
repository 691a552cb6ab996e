"""The shipped CUDA problems (lang: cu): complete, and every solution gets its labelled verdict on a GPU.

Compiling every source for sm_90a is tests/harness/test_builds.py's job (no GPU needed); running them needs
one, so those tests are marked ``cuda``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from problem_testkit import CU_PROBLEM_DIRS, PROBLEMS

from harness import EvalJob, FailureKind, HarnessServer, Mode, Status, load_problem
from harness.roofline import evaluate_expr

L2_BYTES = 50 * 2**20
EXPECT = re.compile(r"^// expect: (\w+) \| (.+)$", re.MULTILINE)
SOLUTIONS = [path for folder in CU_PROBLEM_DIRS for path in sorted(folder.glob("solutions/*/*.cu"))]


def test_vectoradd_and_grayscale_ship_as_cuda_problems() -> None:
    assert {folder.name for folder in CU_PROBLEM_DIRS} >= {"vectoradd_cu", "grayscale_cu"}


@pytest.mark.parametrize("folder", CU_PROBLEM_DIRS, ids=lambda folder: folder.name)
def test_cuda_problem_is_complete(folder: Path) -> None:
    problem = load_problem(folder)
    task = problem.task

    assert task.lang == "cu" and task.devices == ["cuda"] and problem.submission_name == "submission.cu"
    assert {"task.h", "reference.cuh", "utils.h"} <= set(problem.files)
    assert problem.files["utils.h"] == (PROBLEMS / "utils.h").read_text()
    assert "custom_kernel" in problem.templates["CUDA"]
    assert f"--leaderboard {folder.name}" in problem.readme
    assert len(list(folder.glob("solutions/correct/*.cu"))) >= 1 and len(list(folder.glob("solutions/wrong/*.cu"))) >= 2
    assert all(EXPECT.search(path.read_text()) for path in folder.glob("solutions/wrong/*.cu"))
    assert task.roofline is not None and task.ranking_by == "geom"
    assert max(evaluate_expr(task.roofline.bytes, spec) for spec in task.benchmarks) >= 4 * L2_BYTES


@pytest.mark.cuda
@pytest.mark.parametrize("mode", [Mode.TEST, Mode.RANKED], ids=lambda mode: mode.value)
@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda path: str(path.relative_to(PROBLEMS)))
def test_cuda_solution_gets_its_label(solution: Path, mode: Mode, harness_server: HarnessServer) -> None:
    problem = load_problem(solution.parents[2])
    problem = dataclasses.replace(problem, task=dataclasses.replace(problem.task, shape_budget_ms=20.0))
    result = harness_server.evaluate(
        EvalJob(
            problem=problem,
            submission_name=solution.name,
            mode=mode,
            submission_source=solution.read_text(),
            device="cuda",
        )
    )
    expected = EXPECT.search(solution.read_text())
    if expected is None:
        assert result.status is Status.PASSED, result.failure
        assert mode is Mode.TEST or (result.score_us and all(s.achieved_gbps for s in result.shapes))
    else:
        assert result.status is Status.FAILED and result.failure.kind is FailureKind(expected.group(1))
        assert expected.group(2) in result.failure.message
