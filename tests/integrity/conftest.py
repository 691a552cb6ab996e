"""Fixtures of the integrity suite: one warm harness server, the problems the cases run on, and (for hostile
input that goes through the core) the whole service of tests/e2e on a real nats-server."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cases import PROBLEMS, Case
from e2e.conftest import make_system, problems  # noqa: F401 - the service fixtures, reused as they are

from harness import EvalResult, HarnessServer, Problem, load_problem


@pytest.fixture(scope="session")
def problem_set() -> dict[str, Problem]:
    return {name: load_problem(path) for name, path in PROBLEMS.items()}


@pytest.fixture
def run_case(harness_server: HarnessServer, problem_set: dict[str, Problem]) -> Callable[..., EvalResult]:
    def run(case: Case, server: HarnessServer | None = None, **fields: object) -> EvalResult:
        return (server or harness_server).evaluate(case.job(problem_set, **fields))

    return run
