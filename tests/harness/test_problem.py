"""Loading problems: GPU MODE's task.yml as written, kernelrank's optional keys, and the first format."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.loading import load_problem
from harness.problem import CHECKER_ARGS, ProblemError

REFERENCE = """
import torch

def generate_input(size, seed):
    return torch.ones(size) * seed

def ref_kernel(data):
    return data * 2

def check_implementation(data, output):
    return torch.allclose(output, data * 2)
"""


def _problem(folder: Path, task: str, reference: str = REFERENCE, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.yml").write_text(task)
    (folder / "reference.py").write_text(reference)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


PUBLIC = """
files:
  - {"name": "submission.py", "source": "@SUBMISSION@"}
  - {"name": "reference.py", "source": "reference.py"}
  - {"name": "eval.py", "source": "../eval.py"}
lang: "py"
config:
  main: "eval.py"
templates:
  Python: "../template.py"
  Triton: "missing-template.py"
tests:
  - "size: 128; contention: 12.5; seed: -3"
  - {"size": 3, "seed": 4}
benchmarks:
  - {"size": 1024, "seed": 5}
"""


def test_a_public_task_yml_loads_as_written(tmp_path: Path) -> None:
    (tmp_path / "template.py").write_text("def custom_kernel(data): ...\n")
    problem = load_problem(_problem(tmp_path / "scale", PUBLIC))

    assert set(problem.files) == {"reference.py"}  # eval.py is GPU MODE's evaluator: ours replaces it
    assert problem.task.tests[0] == {"size": 128, "contention": 12.5, "seed": -3}
    assert problem.templates == {"Python": "def custom_kernel(data): ...\n"}  # a missing template is skipped
    assert problem.task.ranking_by == "last" and problem.task.devices == ["cuda"]
    assert not problem.task.default_device and not problem.task.strict_output
    assert problem.task.checker_args == CHECKER_ARGS[0]
    assert problem.task.output_may_alias_input is None  # the public conventions (harness.judge.checking)


def test_declaring_devices_sets_the_default_device_and_strict_output_is_read(tmp_path: Path) -> None:
    task = PUBLIC + "devices: [cpu, cuda]\nstrict_output: true\nshape_budget_ms: 250\noutput_may_alias_input: false\n"
    problem = load_problem(_problem(tmp_path / "ours", task) / "task.yml")  # the task.yml itself works too
    assert problem.task.devices == ["cpu", "cuda"] and problem.task.default_device
    assert problem.task.strict_output and problem.task.shape_budget_ms == 250
    assert problem.task.output_may_alias_input is False


def test_the_default_device_is_derived_never_read(tmp_path: Path) -> None:
    assert not load_problem(_problem(tmp_path / "p", PUBLIC + "default_device: true\n")).task.default_device


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ("checker_args: 'output, data'\n", "checker_args must be one of"),
        ("shape_budget_ms: 0\n", "shape_budget_ms must be a positive"),
        ("devices: [tpu]\n", "unknown devices"),
        ("output_may_alias_input: sometimes\n", "output_may_alias_input"),
    ],
)
def test_bad_keys_are_named(tmp_path: Path, extra: str, words: str) -> None:
    with pytest.raises(ProblemError, match=words):
        load_problem(_problem(tmp_path / "p", PUBLIC + extra))


def test_a_missing_path_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match="does not exist; pass a problem folder"):
        load_problem(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProblemError, match="has no task.yml, nor a reference.py"):
        load_problem(tmp_path / "empty")


FIRST = '''"""Double a vector."""
import torch
from helpers import make


def generate_input():
    return make()


def ref_kernel(data):
    return data * 2


check_implementation = lambda custom_output, ref_output: torch.allclose(custom_output, ref_output)
'''


def test_a_lone_reference_stages_the_helpers_it_imports(tmp_path: Path) -> None:
    folder = tmp_path / "double_py"
    folder.mkdir()
    (folder / "reference.py").write_text(FIRST)
    (folder / "helpers.py").write_text(
        "import torch\nfrom more import SIZE\n\n\ndef make():\n    return torch.ones(SIZE)\n"
    )
    (folder / "more.py").write_text("SIZE = 4\n")
    (folder / "unrelated.py").write_text("raise SystemExit\n")

    problem = load_problem(folder)
    assert set(problem.files) == {"reference.py", "helpers.py", "more.py"}
    assert problem.name == "double_py" and problem.task.description == "Double a vector."
    assert problem.task.checker_args == CHECKER_ARGS[1] and not problem.task.default_device
    assert load_problem(folder / "reference.py").files == problem.files


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("def generate_input():\n    pass\n", "defines no ref_kernel, check_implementation"),
        ("def generate_input(:\n", "is not valid Python"),
    ],
)
def test_a_reference_py_that_is_not_the_first_format_is_named(tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / "reference.py").write_text(text)
    with pytest.raises(ProblemError, match=words):
        load_problem(tmp_path / "reference.py")
