"""Helpers shared by the shipped problems, staged next to each reference as ``utils.py``.

The names and signatures follow the public GPU MODE reference-kernels helpers, so a reference written
for that format imports what it expects: ``set_seed``, ``verbose_allclose``, ``verbose_allequal``,
``match_reference``, ``make_match_reference``, ``DeterministicContext``, ``clone_data`` and ``get_device``.
Our problems make inputs on ``torch.get_default_device()``: they declare ``devices``, so the harness selects
the device around ``generate_input``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch

_MAX_SEED = 2**63 - 1  # torch generators take a signed 64-bit seed; ranked seeds can be larger


def set_seed(seed: int = 42) -> None:
    """Seed Python's, NumPy's (when installed) and torch's global generators."""
    seed %= _MAX_SEED
    random.seed(seed)
    try:
        import numpy
    except ImportError:
        pass
    else:
        numpy.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def get_device(use_cuda: bool = True) -> torch.device:
    """CUDA when asked for and present, else the CPU (for problems that run as written, without ``devices``)."""
    return torch.device("cuda" if use_cuda and torch.cuda.is_available() else "cpu")


def make_generator(seed: int) -> torch.Generator:
    """A torch generator on the device the harness selected, seeded from ``seed``."""
    generator = torch.Generator(device=torch.get_default_device())
    generator.manual_seed(seed % _MAX_SEED)
    return generator


def uniform(low: float, high: float, generator: torch.Generator) -> float:
    """One number drawn uniformly from [low, high) with ``generator`` (for seed-dependent offsets and scales)."""
    draw = torch.rand((), generator=generator, device=generator.device, dtype=torch.float64)
    return low + (high - low) * draw.item()


def clone_data(data: Any) -> Any:
    """Clone every tensor in nested tuples, lists and dicts, so a kernel cannot change the checker's copy."""
    if isinstance(data, torch.Tensor):
        return data.clone()
    if isinstance(data, tuple):
        return tuple(clone_data(item) for item in data)
    if isinstance(data, list):
        return [clone_data(item) for item in data]
    if isinstance(data, dict):
        return {key: clone_data(value) for key, value in data.items()}
    return data


def _not_comparable(received: Any, expected: torch.Tensor) -> list[str]:
    """Reasons why two values cannot be compared element by element (empty when they can)."""
    if not isinstance(received, torch.Tensor):
        return [f"OUTPUT TYPE MISMATCH: received a {type(received).__name__}, expected a torch.Tensor"]
    if received.shape != expected.shape:
        return [f"SIZE MISMATCH: received shape {tuple(received.shape)}, expected {tuple(expected.shape)}"]
    if received.device != expected.device:
        return [f"DEVICE MISMATCH: received a tensor on {received.device}, expected {expected.device}"]
    return []


def _mismatch_report(
    mismatch: torch.Tensor, received: torch.Tensor, expected: torch.Tensor, max_print: int
) -> list[str]:
    """The number of mismatched elements and the first ``max_print`` of them, with both values."""
    count = int(mismatch.sum().item())
    if count == 0:
        return []
    lines = [f"Number of mismatched elements: {count}"]
    if mismatch.dim() == 0:
        indices: list[tuple[int, ...]] = [()]
    else:
        flat = mismatch.reshape(-1).nonzero().reshape(-1)[:max_print]
        indices = list(zip(*(c.tolist() for c in torch.unravel_index(flat, mismatch.shape)), strict=True))
    for index in indices:
        lines.append(f"ERROR at {index}: received {received[index].item()}, expected {expected[index].item()}")
    if count > max_print:
        lines.append(f"... and {count - max_print} more mismatched elements")
    return lines


def verbose_allclose(
    received: Any, expected: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-8, max_print: int = 5
) -> list[str]:
    """Compare element-wise with ``|r - e| <= atol + rtol * |e|``; return the reasons for a mismatch.

    NaN, +Inf and -Inf must sit in the same places in both tensors (a NaN where a number is expected is a
    mismatch, NaN against NaN is a match). ``atol`` may be a tensor that broadcasts against ``expected``.
    """
    if reasons := _not_comparable(received, expected):
        return reasons
    work = torch.promote_types(torch.promote_types(received.dtype, expected.dtype), torch.float32)
    r, e = received.to(work), expected.to(work)
    difference = r - e
    all_finite = bool(difference.isfinite().all())  # NaN or Inf on either side shows here
    mismatch = difference.abs_() > e.abs().mul_(rtol).add_(atol)  # False where either side is NaN
    if not all_finite:  # rare: skip six passes when all is finite
        mismatch |= r.isnan() ^ e.isnan()
        mismatch |= r.isposinf() ^ e.isposinf()
        mismatch |= r.isneginf() ^ e.isneginf()
    return _mismatch_report(mismatch, received, expected, max_print)


def verbose_allequal(received: Any, expected: torch.Tensor, max_print: int = 5) -> list[str]:
    """Exact element-wise comparison (NaN against NaN is a match); return the reasons for a mismatch."""
    if reasons := _not_comparable(received, expected):
        return reasons
    mismatch = received != expected
    if expected.is_floating_point():
        mismatch &= ~(received.isnan() & expected.isnan())
    return _mismatch_report(mismatch, received, expected, max_print)


def check_dtype(received: Any, expected: torch.Tensor) -> list[str]:
    """A reason when the output's dtype differs from the reference's (a lower precision does not pass)."""
    if isinstance(received, torch.Tensor) and received.dtype != expected.dtype:
        return [f"DTYPE MISMATCH: received {received.dtype}, expected {expected.dtype}"]
    return []


def verdict(reasons: list[str]) -> tuple[bool, str]:
    """Turn a list of mismatch reasons into the ``(ok, message)`` pair a checker returns."""
    if reasons:
        return False, "the output does not match the reference: " + "; ".join(reasons)
    return True, ""


class DeterministicContext:
    """Run a reference with cuDNN's deterministic kernels and without TF32; restore every setting on exit.

    torch's switch for deterministic algorithms is left alone: turning it on imports torch's compiler stack
    (~1.5 s per process), and the references reduce in float64, where summation order does not matter.
    """

    def __enter__(self) -> DeterministicContext:
        self._saved = (
            torch.backends.cudnn.deterministic,
            torch.backends.cudnn.benchmark,
            torch.backends.cudnn.allow_tf32,
            torch.get_float32_matmul_precision(),
        )
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        return self

    def __exit__(self, *exc_info: object) -> None:
        (
            torch.backends.cudnn.deterministic,
            torch.backends.cudnn.benchmark,
            torch.backends.cudnn.allow_tf32,
            matmul_precision,
        ) = self._saved
        torch.set_float32_matmul_precision(matmul_precision)


def match_reference(
    data: Any, output: Any, ref_kernel: Callable[[Any], torch.Tensor], rtol: float = 1e-5, atol: float = 1e-8
) -> tuple[bool, str]:
    """Check ``output`` against ``ref_kernel(data)``: same dtype, shape and device, values within tolerance.

    ``rtol == atol == 0`` asks for exact equality. The reference runs on ``data`` itself, as in GPU MODE's
    evaluator: the harness hands every checker a copy of its own, so a second copy would only cost time.
    """
    with DeterministicContext(), torch.no_grad():
        expected = ref_kernel(data)
    if rtol == 0 and atol == 0:
        reasons = verbose_allequal(output, expected)
    else:
        reasons = verbose_allclose(output, expected, rtol=rtol, atol=atol)
    return verdict(check_dtype(output, expected) + reasons)


def make_match_reference(
    ref_kernel: Callable[[Any], torch.Tensor], rtol: float = 1e-5, atol: float = 1e-8
) -> Callable[[Any, Any], tuple[bool, str]]:
    """Build a problem's ``check_implementation(data, output)`` from its reference and tolerances."""

    def check_implementation(data: Any, output: Any) -> tuple[bool, str]:
        return match_reference(data, output, ref_kernel, rtol=rtol, atol=atol)

    return check_implementation
