"""Every cheat of the catalogue (the shared notes' integrity.md, C1-C23) ends caught or gains nothing."""

from __future__ import annotations

import pytest
from cases import CATALOGUE, Case
from integrity_testkit import nothing_left, params

from harness import Mode, Status


@pytest.mark.parametrize("case", params(CATALOGUE))
def test_every_cheat_is_caught_for_the_right_reason(case: Case, run_case, harness_server):
    result = run_case(case)
    assert (why := case.judge(result)) is None, why
    # C1 may pass by being honest; C6 is a timing case; asking seeds ahead has nothing to ask in the runner
    assert result.status is not Status.PASSED or case.entry in ("C1", "C6") or case.name == "c16_seed_ahead", (
        "a cheat passed"
    )
    assert nothing_left(harness_server) == []


def test_replay_stores_do_not_outlive_an_evaluation(run_case):
    """C2: what one evaluation stores in /tmp, /dev/shm or HOME, the next one does not find."""
    (case,) = [c for c in CATALOGUE if c.name == "c02_replay_from_files"]
    first, second = (run_case(case, mode=Mode.TEST) for _ in range(2))
    for result in (first, second):
        assert "replayed" not in result.stdout and result.status is Status.PASSED, result.failure
    assert "stored, 3 files visible" in first.stdout  # each store held one file within a run...
    assert "stored, 3 files visible" in second.stdout  # ...and the next run started from empty stores


def test_a_pointer_cache_never_serves_a_stale_output(run_case):
    """C1: if the allocator ever hands the cache a known address again, the stale output is caught."""
    (case,) = [c for c in CATALOGUE if c.name == "c01_cache_by_pointer"]
    result = run_case(case)
    assert result.status is Status.PASSED or result.failure.message.startswith("Wrong output")


def test_every_catalogue_entry_has_a_cheat():
    assert {case.entry for case in CATALOGUE} == {f"C{n}" for n in range(1, 24)}
