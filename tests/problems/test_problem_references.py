"""Each problem's reference, in this process: inputs are reproducible and seed-dependent (integrity C3), and
the reference's own output passes its checker."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from problem_testkit import PROBLEM_DIRS, staged_reference

from harness.loading import load_problem
from harness.problem import Problem


def _largest_test(problem: Problem) -> dict:
    """The test spec with the most bytes, so seed effects show on more than one element."""
    return max(problem.task.tests, key=lambda spec: sum(v for k, v in spec.items() if k != "seed"))


def _leaves(value: object) -> list[object]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _same(a: object, b: object) -> bool:
    left, right = _leaves(a), _leaves(b)
    return len(left) == len(right) and all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(left, right, strict=True)
    )


@pytest.mark.parametrize("folder", PROBLEM_DIRS, ids=[folder.name for folder in PROBLEM_DIRS])
def test_inputs_are_reproducible_and_outputs_depend_on_the_seed(folder: Path, tmp_path: Path) -> None:
    problem = load_problem(folder)
    spec = _largest_test(problem)
    with staged_reference(problem, tmp_path) as reference, torch.device("cpu"):
        first, again = reference.generate_input(**spec), reference.generate_input(**spec)
        other = reference.generate_input(**{**spec, "seed": spec["seed"] + 1})
        huge_seed = reference.generate_input(**{**spec, "seed": 2**63 - 1})

        assert _same(first, again)
        assert not _same(reference.ref_kernel(first), reference.ref_kernel(other))
        assert any(isinstance(leaf, torch.Tensor) for leaf in _leaves(huge_seed))


@pytest.mark.parametrize("folder", PROBLEM_DIRS, ids=[folder.name for folder in PROBLEM_DIRS])
def test_reference_output_passes_its_own_check(folder: Path, tmp_path: Path) -> None:
    problem = load_problem(folder)
    with staged_reference(problem, tmp_path) as reference, torch.device("cpu"):
        for spec in problem.task.tests:
            data = reference.generate_input(**spec)
            ok, message = reference.check_implementation(data, reference.ref_kernel(data))

            assert ok and message == "", f"{spec}: {message}"
