"""Fixtures of the harness's own tests: a tiny fp32 vector-add problem, run on the session's warm harness server.

``evaluate_fixture("wrong_output", Mode.RANKED)`` runs ``tests/fixtures/harness/submissions/wrong_output.py``
through the real harness (server, fork, sandbox, worker) on the CPU. Tests marked ``cuda`` run on a GPU
and are skipped where there is none (tests/conftest.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import EvalJob, EvalResult, HarnessServer, Mode, Problem, load_problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "harness"
SUBMISSIONS = FIXTURES / "submissions"


@pytest.fixture(scope="session")
def problem() -> Problem:
    return load_problem(FIXTURES / "vectoradd")


@pytest.fixture
def make_job(problem: Problem) -> Callable[..., EvalJob]:
    def make(
        submission: str,
        mode: Mode = Mode.TEST,
        *,
        device: str = "cpu",
        task: dict[str, Any] | None = None,
        **fields: Any,
    ) -> EvalJob:
        """A job for a fixture submission; ``task`` overrides fields of the problem's TaskSpec."""
        chosen = problem
        if task:
            chosen = dataclasses.replace(problem, task=dataclasses.replace(problem.task, **task))
        return EvalJob(
            problem=chosen,
            submission_name=f"{submission}.py",
            submission_source=(SUBMISSIONS / f"{submission}.py").read_text(),
            mode=mode,
            device=device,
            **fields,
        )

    return make


@pytest.fixture
def evaluate_fixture(harness_server: HarnessServer, make_job: Callable[..., EvalJob]) -> Callable[..., EvalResult]:
    def run(submission: str, mode: Mode = Mode.TEST, **kwargs: Any) -> EvalResult:
        return harness_server.evaluate(make_job(submission, mode, **kwargs))

    return run
