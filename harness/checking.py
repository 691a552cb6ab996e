"""Checks of one call's output besides the problem's own checker.

The output must be what the reference returns: a plain ``torch.Tensor`` (no subclass: lazy tensors
defer work past the timer), or a tuple/list of them, with the reference's shape, dtype and device; it
must be finite unless the reference's is not; and the inputs must be unchanged, except the tensors the
reference itself writes (GPU MODE problems often pass an output buffer inside ``data``).
The torch functions used here are bound at import, before any submission exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from harness.result import FailureKind

_Tensor = torch.Tensor
_clone = torch.Tensor.clone
_equal = torch.equal
_allclose = torch.allclose
_isfinite = torch.isfinite
_no_grad = torch.no_grad

Path = tuple[Any, ...]


@dataclass(frozen=True)
class TensorLike:
    """What one reference output tensor looks like."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: str


@dataclass(frozen=True)
class Expectation:
    """What the reference does with one shape's input, learnt by running it on a copy."""

    output: Any                    # TensorLike, a tuple of expectations (tuple/list output), or None
    writable: frozenset[Path]      # input tensors the reference writes into
    finite: bool                   # the reference's output holds no NaN or Inf


@dataclass(frozen=True)
class Fault:
    kind: FailureKind
    message: str


def clone_data(data: Any) -> Any:
    """Clone every tensor in nested tuples, lists and dicts."""
    if isinstance(data, _Tensor):
        return _clone(data)
    if isinstance(data, tuple) and hasattr(data, "_fields"):     # a namedtuple takes its fields positionally
        return type(data)(*(clone_data(item) for item in data))
    if isinstance(data, (tuple, list)):
        return type(data)(clone_data(item) for item in data)
    if isinstance(data, dict):
        return {key: clone_data(value) for key, value in data.items()}
    return data


def expect(ref_kernel: Callable[[Any], Any], data: Any) -> Expectation:
    """Run the reference on a copy of ``data``: what it returns and which input tensors it writes."""
    probe, before = clone_data(data), clone_data(data)
    versions = [t._version for _, t in _tensors(probe)]
    with _no_grad():
        output = ref_kernel(probe)
    # a write shows in the version counter (in-place and out= ops) or, for other kernels, in the values
    writable = frozenset(path for (path, now), (_, then), version
                         in zip(_tensors(probe), _tensors(before), versions, strict=True)
                         if now._version != version or not same_values(now, then))
    return Expectation(_shape_of(output), writable, all(_finite(t) for _, t in _tensors(output)))


def structural_fault(expectation: Expectation, pristine: Any, data: Any, output: Any) -> Fault | None:
    """Everything wrong with a call that the problem's checker may not look at; None when all is well."""
    if message := _output_mismatch(expectation.output, output, "the output"):
        return Fault(FailureKind.BAD_OUTPUT_TYPE, message)
    if changed := changed_inputs(expectation, pristine, data):
        return Fault(FailureKind.WRONG_OUTPUT, f"custom_kernel changed its input ({', '.join(changed)}); inputs must "
                                               "stay unchanged unless the reference writes into them too.")
    if expectation.finite and not all(_finite(t) for _, t in _tensors(output)):
        return Fault(FailureKind.WRONG_OUTPUT, "the output contains NaN or Inf where the reference's has none.")
    return None


def changed_inputs(expectation: Expectation, pristine: Any, data: Any) -> list[str]:
    """Names of the input tensors that differ from the pristine copy and that the reference leaves alone."""
    before, after = list(_tensors(pristine)), list(_tensors(data))
    if [p for p, _ in before] != [p for p, _ in after]:
        return ["data"]
    return [_name(path) for (path, then), (_, now) in zip(before, after, strict=True)
            if path not in expectation.writable and not same_values(now, then)]


def run_checker(check: Callable[[Any, Any], Any], pristine: Any, output: Any) -> tuple[bool, str]:
    """Call ``check_implementation`` and normalise its answer: (ok, message), a string or a bool."""
    answer = check(pristine, output)
    if isinstance(answer, tuple) and len(answer) == 2:
        ok, message = answer
    elif isinstance(answer, str):
        ok, message = answer == "", answer
    else:
        ok, message = bool(answer), ""
    if isinstance(message, (list, tuple)):
        message = "\n".join(map(str, message))
    ok = bool(ok)
    return ok, str(message) or ("" if ok else "the checker rejected the output.")


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype, device and elements; NaN matches NaN."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(_allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))
    return bool(_equal(a, b))


def _shape_of(value: Any) -> Any:
    if isinstance(value, _Tensor):
        return TensorLike(tuple(value.shape), value.dtype, value.device.type)
    if isinstance(value, (tuple, list)):
        return tuple(_shape_of(item) for item in value)
    return None


def _output_mismatch(expected: Any, output: Any, where: str) -> str | None:
    if isinstance(expected, TensorLike):
        if type(output) is not _Tensor:
            kind = f"a {type(output).__module__}.{type(output).__qualname__}"
            return f"{where} is {kind}; return a plain torch.Tensor, as the reference does."
        if tuple(output.shape) != expected.shape:
            return f"{where} has shape {tuple(output.shape)}; the reference's has shape {expected.shape}."
        if output.dtype != expected.dtype:
            return f"{where} has dtype {output.dtype}; the reference's has dtype {expected.dtype}."
        if output.device.type != expected.device:
            return f"{where} is on {output.device.type}; the reference's is on {expected.device}."
        return None
    if isinstance(expected, tuple):
        if not isinstance(output, (tuple, list)) or len(output) != len(expected):
            return f"{where} should be a tuple of {len(expected)} items, as the reference returns."
        for index, (item_expected, item) in enumerate(zip(expected, output, strict=True)):
            if message := _output_mismatch(item_expected, item, f"{where}[{index}]"):
                return message
    return None


def _tensors(data: Any, path: Path = ()) -> Iterator[tuple[Path, torch.Tensor]]:
    if isinstance(data, _Tensor):
        yield path, data
    elif isinstance(data, (tuple, list)):
        for index, item in enumerate(data):
            yield from _tensors(item, (*path, index))
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _tensors(value, (*path, key))


def _finite(t: torch.Tensor) -> bool:
    return not (t.is_floating_point() or t.is_complex()) or bool(_isfinite(t).all())


def _name(path: Path) -> str:
    return "data" + "".join(f"[{key!r}]" for key in path)
