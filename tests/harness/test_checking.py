"""The harness's rules around a problem's checker (pure functions, in process): the checker decides,
the harness rejects only what it can name, and says which rule fired and whether the checker was asked."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
import torch

from harness.judge.checking import checker_verdict, clone_data, expect, judge, same_bits
from harness.result import FailureKind


def _add_into(data):
    a, b, out = data
    return torch.add(a, b, out=out)


def _add_new(data):
    a, b, _ = data
    return a + b


def _inputs():
    return torch.arange(4.0), torch.ones(4), torch.empty(4)


def _allclose_checker(reference):
    def check(pristine, output):
        expected = reference(clone_data(pristine))
        return checker_verdict(
            bool(torch.allclose(output.double(), expected.double()))
            if output.numel() == expected.numel()
            else "SIZE MISMATCH"
        )

    return check


def _judge(output, *, reference=_add_into, check=None, data=None, strict=False, may_alias=None):
    """What the harness says about ``output(data)`` (or a fixed output) for one call."""
    data = data if data is not None else _inputs()
    pristine = clone_data(data)
    expectation = expect(reference, data)
    if callable(output):
        output = output(data)
    checker = check or _allclose_checker(reference)
    return judge(expectation, pristine, data, output, checker, reference, strict, may_alias)


def test_clone_data_copies_every_tensor_in_nested_structures():
    Pair = namedtuple("Pair", "x y")
    data = {"pair": Pair(torch.ones(2), 3), "list": [torch.zeros(1)]}
    copy = clone_data(data)
    assert type(copy["pair"]) is Pair and copy["pair"].y == 3
    assert copy["pair"].x is not data["pair"].x and torch.equal(copy["pair"].x, data["pair"].x)
    assert copy["list"][0] is not data["list"][0]


def test_expect_learns_the_output_and_the_buffers_the_reference_writes():
    data = _inputs()
    data[2].copy_(data[0] + data[1])  # the buffer already holds the answer: only the version counter tells
    expectation = expect(_add_into, data)
    assert expectation.writable == {(2,)}
    assert expectation.tensors[()].shape == (4,) and expectation.tensors[()].dtype == torch.float32
    assert expectation.tensors[()].finite and expectation.plain


def test_a_reference_that_ignores_the_output_buffer_writes_nothing():
    assert expect(_add_new, _inputs()).writable == frozenset()


@pytest.mark.parametrize("kernel", [_add_into, _add_new], ids=["into the buffer", "a new tensor"])
@pytest.mark.parametrize("reference", [_add_into, _add_new], ids=["reference writes it", "reference ignores it"])
def test_destination_passing_and_new_outputs_both_pass(kernel, reference):
    """Public problems pass an output buffer in data; the reference may write it or not, so may the kernel."""
    assert _judge(kernel, reference=reference) is None


def test_scribbling_on_an_input_is_caught_after_the_checker_accepted():
    def scribble(data):
        out = _add_into(data)
        data[1].zero_()
        return out

    rejection = _judge(scribble, reference=_add_new)
    assert (rejection.kind, rejection.rule, rejection.consulted) == (FailureKind.WRONG_OUTPUT, "inputs-unchanged", True)
    assert "data[1]" in rejection.message and "data[2]" not in rejection.message


def test_an_input_the_output_aliases_may_change():
    def in_place(data):
        a, b, _ = data
        return a.add_(b)  # computes in x and returns it: same storage, so no scribble

    assert _judge(in_place, reference=_add_new) is None


def test_a_view_of_an_input_counts_as_aliasing_it():
    def in_place_view(data):
        a, b, _ = data
        return a.add_(b).view(2, 2).view(4)

    assert _judge(in_place_view, reference=_add_new) is None


def _copy(data):
    return data.clone()


@pytest.mark.parametrize("may_alias", [None, False], ids=["public conventions", "output_may_alias_input false"])
@pytest.mark.parametrize("handed_back", [lambda x: x, lambda x: x.view(2, 2).view(4)], ids=["itself", "a view"])
def test_an_input_handed_back_as_the_output_is_refused_after_the_checker_accepted(may_alias, handed_back):
    rejection = _judge(handed_back, reference=_copy, data=torch.arange(4.0), may_alias=may_alias)
    assert (rejection.kind, rejection.rule, rejection.consulted) == (
        FailureKind.BAD_OUTPUT_TYPE,
        "output-not-input",
        True,
    )
    assert "shares memory with data" in rejection.message


def test_output_may_alias_input_true_allows_handing_an_input_back():
    assert _judge(lambda x: x, reference=_copy, data=torch.arange(4.0), may_alias=True) is None


def test_an_input_the_reference_returns_may_be_returned():
    assert _judge(lambda x: x, reference=lambda x: x.view(4), data=torch.arange(4.0), may_alias=False) is None


def test_false_allows_only_the_buffers_the_reference_writes():
    """Where the reference writes the buffer, so may the kernel; where it ignores it, or for a real input, the
    problem's promise (a new output) holds even if the call changed the aliased input."""
    in_place = lambda data: data[0].add_(data[1])  # noqa: E731
    assert _judge(_add_into, reference=_add_into, may_alias=False) is None
    assert _judge(_add_into, reference=_add_new, may_alias=False).rule == "output-not-input"
    assert _judge(in_place, reference=_add_new, may_alias=False).rule == "output-not-input"
    assert _judge(in_place, reference=_add_new) is None  # the public conventions: a changed, aliased input


def test_the_checker_decides_dtype_and_shape_unless_strict():
    assert _judge(lambda d: _add_new(d).double()) is None  # this checker compares values only
    rejection = _judge(lambda d: _add_new(d).double(), strict=True)
    assert (rejection.kind, rejection.rule, rejection.consulted) == (
        FailureKind.BAD_OUTPUT_TYPE,
        "strict-output",
        False,
    )
    assert "dtype torch.float64" in rejection.message


def test_strict_output_checks_structure_and_shape():
    rejection = _judge(lambda d: _add_new(d)[:3], strict=True)
    assert rejection.rule == "strict-output" and "shape (3,)" in rejection.message
    rejection = _judge(
        lambda d: (d[0],), reference=lambda d: (d[0] + 1, d[1] + 1), check=lambda p, o: (True, ""), strict=True
    )
    assert rejection.rule == "strict-output" and "sequence of 2 items" in rejection.message


def test_a_rejecting_checker_is_the_verdict_with_its_own_words():
    rejection = _judge(lambda d: _add_new(d) + 1, check=lambda p, o: (False, "ERROR AT (0,): 2.0 1.0"))
    assert (rejection.kind, rejection.rule, rejection.consulted) == (FailureKind.WRONG_OUTPUT, "checker", True)
    assert rejection.message == "ERROR AT (0,): 2.0 1.0"


def test_a_tensor_subclass_is_rejected_before_the_checker():
    seen = []
    lazy = type("Lazy", (torch.Tensor,), {})
    rejection = _judge(lambda d: _add_new(d).as_subclass(lazy), check=lambda p, o: seen.append(o) or (True, ""))
    assert (rejection.kind, rejection.rule, rejection.consulted) == (FailureKind.BAD_OUTPUT_TYPE, "plain-tensor", False)
    assert "Lazy" in rejection.message and seen == []


def test_an_object_intercepting_torch_functions_is_a_lazy_output_too():
    class Deferred:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    rejection = _judge(lambda d: [Deferred()], reference=lambda d: [d[0] + 1])
    assert rejection.rule == "plain-tensor" and "[0]" in rejection.message


def test_subclasses_are_fine_where_the_reference_returns_them():
    marked = type("Marked", (torch.Tensor,), {})
    reference = lambda d: _add_new(d).as_subclass(marked)  # noqa: E731
    assert _judge(lambda d: _add_new(d).as_subclass(marked), reference=reference, check=lambda p, o: (True, "")) is None


def test_an_output_on_another_device_is_rejected(monkeypatch):
    """CPU-only here: a meta tensor stands in for "another device than the reference's"."""
    rejection = _judge(lambda d: torch.empty(4, device="meta"), check=lambda p, o: (True, ""))
    assert (rejection.kind, rejection.rule, rejection.consulted) == (FailureKind.BAD_OUTPUT_TYPE, "same-device", False)
    assert "meta" in rejection.message and "cpu" in rejection.message


def _with_nan(data):
    out = _add_new(data)
    out[0] = float("nan")
    return out


def test_nan_a_lenient_checker_accepts_is_caught_after_it():
    lenient = lambda p, o: (not bool(((o - _add_new(p)).abs() > 1e-3).any()), "")  # NaN > tol is False  # noqa: E731
    rejection = _judge(_with_nan, reference=_add_new, check=lenient)
    assert (rejection.kind, rejection.rule, rejection.consulted) == (FailureKind.WRONG_OUTPUT, "finite-output", True)
    assert "NaN or Inf" in rejection.message


def test_nan_passes_where_this_calls_reference_has_it_too():
    """The shape's expectation saw finite values; this call's input makes the reference non-finite too."""

    def reference(data):
        a, b, _ = data
        return torch.log(a + b - 1)  # -inf where a + b == 1

    data = (torch.arange(4.0), torch.ones(4), torch.empty(4))
    expectation = expect(reference, (torch.arange(4.0) + 5, torch.ones(4), torch.empty(4)))
    assert expectation.tensors[()].finite
    output = reference(data)
    assert judge(expectation, clone_data(data), data, output, lambda p, o: (True, ""), reference, False) is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ((True, ""), (True, "")),
        ((True, "close enough"), (True, "close enough")),
        ((False, ["SIZE MISMATCH", "3 elements"]), (False, "SIZE MISMATCH\n3 elements")),
        ([False, "values differ"], (False, "values differ")),
        ((torch.tensor(True), ""), (True, "")),
        ((np.bool_(False), "no"), (False, "no")),
        ("", (True, "")),
        ("  ", (True, "  ")),
        ("mismatch found! ERROR AT (1,)", (False, "mismatch found! ERROR AT (1,)")),
        ([], (True, "")),
        (
            ["Number of mismatched elements: 3", "ERROR AT (0,)"],
            (False, "Number of mismatched elements: 3\nERROR AT (0,)"),
        ),
        ((), (True, "")),
        (True, (True, "")),
        (False, (False, "the checker rejected the output (it gave no reason).")),
        (torch.tensor(False), (False, "the checker rejected the output (it gave no reason).")),
        (None, (True, "")),
    ],
)
def test_every_checker_answer_style_is_understood(answer, expected):
    assert checker_verdict(answer) == expected


def test_none_fails_where_the_format_promises_a_bool():
    ok, message = checker_verdict(None, none_passes=False)
    assert not ok and "None" in message


def test_same_bits_tells_nan_payloads_and_signed_zeros_apart_but_matches_equal_nans():
    nan = torch.tensor([float("nan"), 0.0])
    assert same_bits(nan, nan.clone())
    assert not same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert same_bits(torch.tensor([1 + 2j]), torch.tensor([1 + 2j]))
    assert not same_bits(torch.ones(2), torch.ones(3))
    assert same_bits(torch.tensor([True, False]), torch.tensor([True, False]))
