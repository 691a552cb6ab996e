"""The output checks the harness adds around a problem's own checker (pure functions, in process)."""

from __future__ import annotations

from collections import namedtuple

import pytest
import torch

from harness.checking import clone_data, expect, run_checker, structural_fault
from harness.result import FailureKind


def _add_into(data):
    a, b, out = data
    return torch.add(a, b, out=out)


def _inputs():
    return torch.arange(4.0), torch.ones(4), torch.empty(4)


def test_clone_data_copies_every_tensor_in_nested_structures():
    Pair = namedtuple("Pair", "x y")
    data = {"pair": Pair(torch.ones(2), 3), "list": [torch.zeros(1)]}
    copy = clone_data(data)
    assert type(copy["pair"]) is Pair and copy["pair"].y == 3
    assert copy["pair"].x is not data["pair"].x and torch.equal(copy["pair"].x, data["pair"].x)
    assert copy["list"][0] is not data["list"][0]


def test_expect_learns_the_output_and_the_buffers_the_reference_writes():
    data = _inputs()
    data[2].copy_(data[0] + data[1])        # the buffer already holds the answer: only the version counter tells
    expectation = expect(_add_into, data)
    assert expectation.writable == {(2,)}
    assert expectation.output.shape == (4,) and expectation.output.dtype == torch.float32
    assert expectation.finite


def _fault(output, data=None, reference=_add_into):
    data = data or _inputs()
    pristine = clone_data(data)
    expectation = expect(reference, data)
    if callable(output):
        output = output(data)
    return structural_fault(expectation, pristine, data, output)


def test_a_correct_call_has_no_structural_fault():
    assert _fault(_add_into) is None


@pytest.mark.parametrize(("output", "words"), [
    (lambda d: d[2].as_subclass(type("Sub", (torch.Tensor,), {})), "plain torch.Tensor"),
    (lambda d: d[2][:3], "shape (3,)"),
    (lambda d: d[2].double(), "dtype torch.float64"),
    (lambda d: d[2].tolist(), "a builtins.list"),
])
def test_outputs_unlike_the_references_are_bad_output_types(output, words):
    fault = _fault(output)
    assert fault.kind is FailureKind.BAD_OUTPUT_TYPE and words in fault.message


def test_tuples_must_match_the_references_length():
    fault = _fault(lambda d: (d[0],), reference=lambda d: (d[0] + 1, d[1] + 1))
    assert fault.kind is FailureKind.BAD_OUTPUT_TYPE and "tuple of 2" in fault.message


def test_inputs_may_change_only_where_the_reference_writes():
    def scribble(data):
        data[1].zero_()
        return _add_into(data)

    fault = _fault(scribble)
    assert fault.kind is FailureKind.WRONG_OUTPUT and "data[1]" in fault.message


def test_nan_fails_unless_the_reference_has_it_too():
    def with_nan(data):
        out = _add_into(data)
        out[0] = float("nan")
        return out

    assert _fault(with_nan).kind is FailureKind.WRONG_OUTPUT
    assert _fault(with_nan, reference=with_nan) is None


@pytest.mark.parametrize(("answer", "expected"), [
    ((True, ""), (True, "")),
    ((False, ["SIZE MISMATCH", "3 elements"]), (False, "SIZE MISMATCH\n3 elements")),
    ("", (True, "")),
    ("values differ", (False, "values differ")),
    (True, (True, "")),
    (False, (False, "the checker rejected the output.")),
    (torch.tensor(False), (False, "the checker rejected the output.")),
])
def test_every_checker_answer_style_is_understood(answer, expected):
    assert run_checker(lambda data, output: answer, None, None) == expected
