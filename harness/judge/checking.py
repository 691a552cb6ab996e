"""The harness's own rules around a problem's checker (``docs/problem-format.md``, "The rule").

The problem's ``check_implementation`` decides whether an output is correct. Besides it, the harness
rejects only what it can name as a cheat, and says which rule fired and whether the checker was consulted:

before the checker (not consulted)
  plain-tensor      the reference's output holds only plain tensors, the output holds a tensor subclass or
                    another object that intercepts torch functions (a lazy output computes after the timer)
  same-device       an output tensor sits on another device than the reference's tensor at the same place
  strict-output     only with ``strict_output: true``: structure, shapes and dtypes differ from the reference's
the checker
  checker           ``check_implementation`` rejects the output (when it raises, the worker reports that)
after the checker accepted
  output-not-input  an output tensor shares memory with an input tensor that the reference neither writes nor
                    returns, and the problem does not allow it (``output_may_alias_input``: unset, the call left
                    that input as it was, so an input was handed back; ``false``, always; ``true``, never)
  inputs-unchanged  an input tensor changed that the reference does not write and that no output tensor
                    shares memory with (writing into a destination buffer and returning it is fine)
  finite-output     NaN or Inf in an output tensor where the reference's tensor at that place has none

The torch functions used here are bound at import, before any submission exists.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from harness.failures import Rejection
from harness.problem import Opaque
from harness.result import FailureKind

_Tensor = torch.Tensor
_clone = torch.Tensor.clone
_view = torch.Tensor.view
_storage = torch.Tensor.untyped_storage
_equal = torch.equal
_isfinite = torch.isfinite
_sum = torch.sum
_view_as_real = torch.view_as_real
_no_grad = torch.no_grad
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
MAX_DEPTH = 16  # nesting followed into tuples, lists and dicts; deeper values count as leaves

Path = tuple[Any, ...]
Check = Callable[[Any, Any], tuple[bool, str]]


@dataclass(frozen=True)
class TensorLike:
    """What one tensor of the reference's output looks like."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    plain: bool  # exactly torch.Tensor, no subclass
    finite: bool  # no NaN or Inf


@dataclass(frozen=True)
class Expectation:
    """What the reference does with one shape's input, learnt by running it on a copy."""

    output: Any  # TensorLike, a tuple of expectations (tuple/list output), or None
    tensors: dict[Path, TensorLike]  # the output's tensors by place
    writable: frozenset[Path]  # input tensors the reference writes into
    returned: frozenset[Path] = frozenset()  # input tensors the reference's output shares memory with

    @property
    def plain(self) -> bool:
        return all(t.plain for t in self.tensors.values())

    @property
    def on_host(self) -> bool:
        """The reference's output lives in host memory (its problem keeps data on the host)."""
        return bool(self.tensors) and all(t.device.type == "cpu" for t in self.tensors.values())


def clone_data(data: Any) -> Any:
    """Clone every tensor in nested tuples, lists and dicts (and every ``Opaque`` value)."""
    if isinstance(data, _Tensor):
        return _clone(data)
    if isinstance(data, Opaque):
        return data.clone()
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple takes its fields positionally
        return type(data)(*(clone_data(item) for item in data))
    if isinstance(data, (tuple, list)):
        return type(data)(clone_data(item) for item in data)
    if isinstance(data, dict):
        return {key: clone_data(value) for key, value in data.items()}
    return data


def expect(ref_kernel: Callable[[Any], Any], data: Any) -> Expectation:
    """Run the reference on a copy of ``data``: what it returns and which input tensors it writes."""
    probe, before = clone_data(data), clone_data(data)
    versions = [t._version for _, t in tensors_of(probe)]
    with _no_grad():
        output = ref_kernel(probe)
    # a write shows in the version counter (in-place and out= ops) or, for other kernels, in the bits
    writable = frozenset(
        path
        for (path, now), (_, then), version in zip(tensors_of(probe), tensors_of(before), versions, strict=True)
        if now._version != version or not same_bits(now, then)
    )
    returned = frozenset(path for path, t in tensors_of(probe) if _shares(t, _spans(output)))
    return Expectation(_structure(output), {path: _like(t) for path, t in tensors_of(output)}, writable, returned)


def judge(
    expectation: Expectation,
    pristine: Any,
    data: Any,
    output: Any,
    check: Check,
    reference: Callable[[Any], Any],
    strict: bool,
    may_alias: bool | None = None,
) -> Rejection | None:
    """Everything that makes one call's output unacceptable, or None.

    ``check(pristine, output)`` is the problem's checker, normalised to ``(ok, message)``; it may raise.
    ``reference`` runs only to confirm a NaN/Inf the shape's expectation did not foresee. ``may_alias``: the
    problem's ``output_may_alias_input``.
    """
    if rejection := _before_checker(expectation, output, strict):
        return rejection
    # before the checker, which may write its copy of the input
    changed = changed_inputs(expectation, pristine, data, output)
    aliased = aliased_inputs(expectation, pristine, data, output, may_alias)
    unforeseen = [
        path
        for path, t in tensors_of(output)
        if (ref := expectation.tensors.get(path)) is not None and ref.finite and not _finite(t)
    ]
    witness = clone_data(pristine) if unforeseen else None
    ok, message = check(pristine, output)
    if not ok:
        return Rejection(FailureKind.WRONG_OUTPUT, "checker", True, message)
    if aliased:
        return _aliasing(aliased, may_alias)
    if changed:
        return Rejection(
            FailureKind.WRONG_OUTPUT,
            "inputs-unchanged",
            True,
            (
                f"custom_kernel changed {', '.join(changed)}, which the reference does not write and the output does "
                "not share memory with. Leave the inputs as they are (writing into an output buffer that the input "
                "provides is fine when you return it)."
            ),
        )
    if unforeseen:
        with _no_grad():
            expected = dict(tensors_of(reference(witness)))
        if bad := [p for p in unforeseen if p not in expected or _finite(expected[p])]:
            return Rejection(
                FailureKind.WRONG_OUTPUT,
                "finite-output",
                True,
                f"{_name(bad[0], 'the output')} holds NaN or Inf where the reference's output has none.",
            )
    return None


def changed_inputs(expectation: Expectation, pristine: Any, data: Any, output: Any) -> list[str]:
    """Input tensors that differ from the pristine copy, are not written by the reference and not aliased."""
    before, after = list(tensors_of(pristine)), list(tensors_of(data))
    if [p for p, _ in before] != [p for p, _ in after]:
        return ["the structure of data"]
    shared = _spans(output)
    return [
        _name(path)
        for (path, then), (_, now) in zip(before, after, strict=True)
        if path not in expectation.writable and not _shares(now, shared) and not same_bits(now, then)
    ]


def aliased_inputs(
    expectation: Expectation, pristine: Any, data: Any, output: Any, may_alias: bool | None
) -> list[str]:
    """Input tensors the output shares memory with although the problem does not allow it (output-not-input):
    never with ``may_alias`` true; with false, every one the reference neither writes nor returns; unset (the
    public conventions: a destination buffer inside ``data`` may be written and returned), only those the call
    also left as they were, so that an input was handed back as the output."""
    if may_alias:
        return []
    shared, before = _spans(output), dict(tensors_of(pristine))
    return [
        _name(path)
        for path, now in tensors_of(data)
        if path not in expectation.writable
        and path not in expectation.returned
        and _shares(now, shared)
        and (may_alias is False or ((then := before.get(path)) is not None and same_bits(now, then)))
    ]


def checker_verdict(answer: Any, none_passes: bool = True) -> tuple[bool, str]:
    """A checker's answer as ``(ok, message)``, in every style public problems use.

    ``(ok, message)`` tuples; strings (empty: passed, else the reason); lists or tuples of reasons (empty:
    passed); bools and boolean tensors; ``None`` from assertion-style checkers, which raise on a mismatch
    (``none_passes``; the first format's checkers return a bool, so there None fails).
    """
    if answer is None:
        return none_passes, "" if none_passes else "the checker returned None instead of True or False."
    if isinstance(answer, str):
        return not answer.strip(), answer
    if isinstance(answer, (tuple, list)):
        if answer and _is_flag(answer[0]):
            ok, message = bool(answer[0]), _text(answer[1:])
        else:
            ok, message = not any(str(reason).strip() for reason in answer), _text(answer)
    else:
        ok, message = bool(answer), ""
    return ok, message or ("" if ok else "the checker rejected the output (it gave no reason).")


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype, device and bit patterns (so NaN matches the same NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    with contextlib.suppress(RuntimeError, KeyError, TypeError):  # no plain bits (sparse, quantized): values
        a, b = _bits(a), _bits(b)
    return bool(_equal(a, b))


def tensors_of(data: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every tensor (subclasses included) in nested tuples, lists and dicts, with its place."""
    if isinstance(data, _Tensor):
        yield path, data
    elif len(path) < MAX_DEPTH and isinstance(data, (tuple, list)):
        for index, item in enumerate(data):
            yield from tensors_of(item, (*path, index))
    elif len(path) < MAX_DEPTH and isinstance(data, dict):
        for key, value in data.items():
            yield from tensors_of(value, (*path, key))


def _before_checker(expectation: Expectation, output: Any, strict: bool) -> Rejection | None:
    if expectation.plain and (lazy := _first_lazy(output)):
        path, value = lazy
        what = "a tensor subclass" if isinstance(value, _Tensor) else "an object that intercepts torch functions"
        return Rejection(
            FailureKind.BAD_OUTPUT_TYPE,
            "plain-tensor",
            False,
            (
                f"{_name(path, 'the output')} is a {type(value).__module__}.{type(value).__qualname__}, {what}; return "
                "plain torch.Tensor objects, as the reference does (a lazy output would compute after the timer)."
            ),
        )
    for path, tensor in tensors_of(output):
        if (ref := expectation.tensors.get(path)) is not None and tensor.device != ref.device:
            return Rejection(
                FailureKind.BAD_OUTPUT_TYPE,
                "same-device",
                False,
                (
                    f"{_name(path, 'the output')} is on {tensor.device}; the reference's is on {ref.device}. Return "
                    "the output on the device the reference uses."
                ),
            )
    if strict and (message := _mismatch(expectation.output, output, "the output")):
        return Rejection(
            FailureKind.BAD_OUTPUT_TYPE,
            "strict-output",
            False,
            f"{message} This problem asks for the reference's exact structure, shapes and dtypes.",
        )
    return None


def _aliasing(aliased: list[str], may_alias: bool | None) -> Rejection:
    promise = (
        "this problem's outputs may not share memory with its inputs (output_may_alias_input: false)"
        if may_alias is False
        else "the call left it as it was, so an input was handed back instead of an output"
    )
    return Rejection(
        FailureKind.BAD_OUTPUT_TYPE,
        "output-not-input",
        True,
        (
            f"The output shares memory with {', '.join(aliased)}, an input the reference neither writes nor returns; "
            f"{promise}. Return a tensor of your own, or write into an output buffer that comes with the input."
        ),
    )


def _first_lazy(value: Any, path: Path = ()) -> tuple[Path, Any] | None:
    if isinstance(value, _Tensor):
        return (path, value) if type(value) is not _Tensor else None
    if len(path) < MAX_DEPTH and isinstance(value, (tuple, list, dict)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return next((found for key, item in items if (found := _first_lazy(item, (*path, key)))), None)
    intercepts = hasattr(type(value), "__torch_function__") or hasattr(type(value), "__torch_dispatch__")
    return (path, value) if intercepts else None


def _structure(value: Any) -> Any:
    if isinstance(value, _Tensor):
        return _like(value)
    if isinstance(value, (tuple, list)):
        return tuple(_structure(item) for item in value)
    return None


def _like(t: torch.Tensor) -> TensorLike:
    return TensorLike(tuple(t.shape), t.dtype, t.device, type(t) is _Tensor, _finite(t))


def _mismatch(expected: Any, output: Any, where: str) -> str | None:
    """How ``output`` differs from the reference's structure, shapes and dtypes (strict-output)."""
    if isinstance(expected, TensorLike):
        if not isinstance(output, _Tensor):
            return f"{where} is a {type(output).__module__}.{type(output).__qualname__}; the reference's is a tensor."
        if tuple(output.shape) != expected.shape:
            return f"{where} has shape {tuple(output.shape)}; the reference's has shape {expected.shape}."
        if output.dtype != expected.dtype:
            return f"{where} has dtype {output.dtype}; the reference's has dtype {expected.dtype}."
        return None
    if isinstance(expected, tuple):
        if not isinstance(output, (tuple, list)) or len(output) != len(expected):
            return f"{where} should be a sequence of {len(expected)} items, as the reference returns."
        for index, (item_expected, item) in enumerate(zip(expected, output, strict=True)):
            if message := _mismatch(item_expected, item, f"{where}[{index}]"):
                return message
    return None


def _bits(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        t = _view_as_real(t)
    return _view(t, _BITS[t.element_size()]) if t.is_floating_point() else t


def _memory(t: torch.Tensor) -> tuple[int, int] | None:
    """The address range of the memory a tensor's storage holds; None when it has none."""
    try:
        storage = _storage(t)
        start, size = storage.data_ptr(), storage.nbytes()
    except (RuntimeError, NotImplementedError, TypeError):
        return None
    return (start, start + size) if start and size else None


def _spans(value: Any) -> list[tuple[int, int]]:
    """The memory of every tensor in ``value``."""
    return [span for _, t in tensors_of(value) if (span := _memory(t)) is not None]


def _shares(t: torch.Tensor, spans: list[tuple[int, int]]) -> bool:
    mine = _memory(t)
    return mine is not None and any(mine[0] < end and start < mine[1] for start, end in spans)


def _finite(t: torch.Tensor) -> bool:
    """No NaN or Inf in ``t``: one reduction, since a float64 sum of finite values stays finite."""
    if not (t.is_floating_point() or t.is_complex()):
        return True
    try:
        total = _sum(t, dtype=torch.complex128 if t.is_complex() else torch.float64)
    except (RuntimeError, TypeError):  # a dtype without a float64 sum (float8): element by element
        return bool(_isfinite(t).all())
    return bool(_isfinite(total))


def _is_flag(value: Any) -> bool:
    if isinstance(value, _Tensor):
        return value.dtype == torch.bool and value.numel() == 1
    kind = type(value)
    return kind is bool or (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"))  # numpy's bool


def _text(parts: Any) -> str:
    """A message from what follows the flag, or from a list of reasons."""
    if isinstance(parts, (tuple, list)):
        return "\n".join(text for part in parts if (text := _text(part)))
    return "" if parts is None else str(parts).strip()


def _name(path: Path, root: str = "data") -> str:
    return root + "".join(f"[{key!r}]" for key in path)
