"""Honest fast solutions are never caught and never flagged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cases import HONEST, REPO, Case
from integrity_testkit import params

from harness.host import precheck


@pytest.mark.parametrize("case", params(HONEST))
def test_honest_solutions_pass_unflagged(case: Case, run_case):
    if "torch.compile" in case.defence and not case.cuda and shutil.which("g++") is None:
        pytest.skip("Inductor's CPU backend needs a C++ compiler (.ci/run installs g++)")
    result = run_case(case)
    assert (why := case.judge(result)) is None, why
    assert result.score_us is not None and result.score_us > 0


SHIPPED = sorted(REPO.glob("problems/*/solutions/correct/*.py"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parents[2].name}-{p.stem}")
def test_no_shipped_correct_solution_is_flagged(path: Path):
    findings = precheck.check(path.read_text(), path.name)
    assert [f for f in findings if f.hold] == [], findings
