"""Cutting a message to the bus's payload limit: texts first (head and tail kept), lists if texts cannot do it."""

from __future__ import annotations

import pytest

from core.contracts.bus._fit import TooLarge, encoded_size, fit
from core.contracts.messages import Part, PartKind, Platform, Reply, ReplyTo, RunResult
from harness import result as results
from harness.result import EvalResult, Failure, FailureKind, Mode, Status

LIMIT = 64 * 1024


def result(**fields) -> RunResult:
    return RunResult(
        run_id="run-1",
        submission_id=7,
        gpu="H100",
        worker="w",
        result=EvalResult(status=Status.FAILED, mode=Mode.RANKED, problem="vectoradd", **fields),
    )


def test_a_message_that_fits_is_returned_as_it_is() -> None:
    small = result(stdout="hello")
    assert fit(small, LIMIT) is small


def test_the_longest_texts_are_cut_keeping_their_head_and_tail() -> None:
    big = result(
        stdout="o" * 300_000,
        stderr="short",
        failure=Failure(kind=FailureKind.EXCEPTION, message="HEAD" + "m" * 2_000_000 + "TAIL", log_tail="l" * 100_000),
    )
    cut = fit(big, LIMIT)
    assert encoded_size(cut) <= LIMIT
    assert cut.result.failure.message.startswith("HEAD") and cut.result.failure.message.endswith("TAIL")
    assert "characters cut to fit the message limit" in cut.result.failure.message
    assert (cut.run_id, cut.result.status, cut.result.failure.kind, cut.result.stderr) == (
        "run-1",
        Status.FAILED,
        FailureKind.EXCEPTION,
        "short",
    )
    assert big.result.failure.message.endswith("m" * 100 + "TAIL")  # the caller's message is left alone


def test_text_that_escapes_to_several_bytes_per_character_fits_too() -> None:
    cut = fit(result(stdout="\x00é" * 400_000), LIMIT)
    assert encoded_size(cut) <= LIMIT


@pytest.mark.slow
def test_a_huge_list_of_small_items_is_shortened() -> None:
    tests = [results.TestResult(spec={"size": i}, passed=False, message="no") for i in range(50_000)]
    cut = fit(result(tests=tests), LIMIT)
    assert encoded_size(cut) <= LIMIT and 0 < len(cut.result.tests) < len(tests)
    assert cut.result.tests[0].spec == {"size": 0}


def test_bytes_are_never_cut() -> None:
    image = Reply(reply_to=ReplyTo(Platform.SLACK, "C1"), parts=[Part(PartKind.IMAGE, data=b"\x89PNG" * 40_000)])
    with pytest.raises(TooLarge):
        fit(image, LIMIT)
