"""Hostile submissions through the real harness: one clear sentence each, the server lives on, nothing left.

The service-level cases (files the core refuses, unknown or closed leaderboards, rate limits, forged
headers) are in test_hostile_service.py.
"""

from __future__ import annotations

import os

import pytest
from cases import HOSTILE, Case
from integrity_testkit import nothing_left, params

from harness import Status

# Cases that signal or fork without bound: only where the sandbox gives the job a PID namespace or a user of
# its own (a developer's unsandboxed account would take the blows itself).
_NEEDS_CONTAINMENT = {"fork_bomb", "kills_init"}
_ONE_SENTENCE_MAX = 600


@pytest.mark.parametrize("case", params(HOSTILE))
def test_hostile_submissions_end_with_one_clear_sentence(case: Case, run_case, harness_server):
    if case.name in _NEEDS_CONTAINMENT and "not isolated" in harness_server.sandbox and os.geteuid() != 0:
        pytest.skip("this host cannot contain it")
    result = run_case(case)
    assert (why := case.judge(result)) is None, why
    if result.status is not Status.PASSED:
        message = result.failure.message
        assert len(message) < _ONE_SENTENCE_MAX and message.rstrip().endswith("."), message
    assert nothing_left(harness_server) == []
    assert harness_server.running  # the same warm server takes the next job
