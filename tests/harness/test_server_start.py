"""A harness server started for one evaluation (``kernelrank eval``) imports only what that evaluation uses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness import EvalJob, HarnessServer, Mode, Status, load_problem
from harness.host.server_process import preloads_for

PROBLEMS = Path(__file__).resolve().parents[2] / "problems"


def job_for(problem: str, solution: str) -> EvalJob:
    path = PROBLEMS / problem / "solutions" / "correct" / solution
    return EvalJob(
        problem=load_problem(PROBLEMS / problem),
        submission_name=path.name,
        submission_source=path.read_text(),
        mode=Mode.TEST,
        device="cpu",
    )


@pytest.mark.parametrize(
    ("solution", "expected"),
    [
        ("pytorch.py", ()),
        ("triton_add.py", ("triton",)),
        ("cuda_inline.py", ("torch.utils.cpp_extension",)),
    ],
)
def test_a_one_job_server_preloads_what_the_submission_names(solution, expected):
    assert preloads_for(job_for("vectoradd", solution)) == expected


def test_torch_compile_in_the_submission_or_the_problem_preloads_the_compiler():
    job = job_for("vectoradd", "pytorch.py")
    compiled = dataclasses.replace(job, submission_source="import torch\nkernel = torch.compile(lambda x: x)\n")
    assert preloads_for(compiled) == ("torch._inductor.config",)
    files = {**job.problem.files, "utils.py": "torch.use_deterministic_algorithms(True)\n"}
    strict = dataclasses.replace(job, problem=dataclasses.replace(job.problem, files=files))
    assert preloads_for(strict) == ("torch._inductor.config",)


@pytest.mark.slow
def test_a_server_without_preloads_still_evaluates():
    with HarnessServer(preloads=()) as server:
        result = server.evaluate(job_for("vectoradd", "pytorch.py"))
    assert result.status is Status.PASSED, result.failure
