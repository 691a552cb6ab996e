"""Helpers shared by the conformance problems, written in the style of GPU MODE's public ``utils.py``.

These problems test that kernelrank runs public-format problems as their authors wrote them, so the
helpers behave like the public ones: ``verbose_allclose`` returns a list of reasons, ``match_reference``
an ``(ok, message)`` pair and ``get_device`` falls back to the CPU.
"""

import os
import random

import numpy as np
import torch


def set_seed(seed=42):
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def get_device(use_cuda: bool = True) -> torch.device:
    """CUDA when there is one, else the CPU."""
    if use_cuda and torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


@torch.no_grad()
def verbose_allclose(received, expected, rtol=1e-05, atol=1e-08, max_print=5) -> list[str]:
    """Reasons why ``received`` is not within ``atol + rtol * |expected|`` of ``expected``; [] when it is.

    NaN and infinities must sit in the same places in both.
    """
    if received.shape != expected.shape:
        return [f"SIZE MISMATCH: {tuple(received.shape)} vs {tuple(expected.shape)}"]
    difference = torch.abs(received.double() - expected.double())
    mismatched = difference > atol + rtol * torch.abs(expected.double())
    for special in (torch.isnan, torch.isposinf, torch.isneginf):
        mismatched |= torch.logical_xor(special(received), special(expected))
    return _report(mismatched, received, expected, max_print)


@torch.no_grad()
def verbose_allequal(received, expected, max_print=5) -> list[str]:
    """Reasons why ``received`` differs from ``expected`` anywhere; [] when equal everywhere."""
    if received.shape != expected.shape:
        return [f"SIZE MISMATCH: {tuple(received.shape)} vs {tuple(expected.shape)}"]
    return _report(torch.not_equal(received, expected), received, expected, max_print)


def _report(mismatched, received, expected, max_print):
    count = int(mismatched.count_nonzero().item())
    if count == 0:
        return []
    details = [f"Number of mismatched elements: {count}"]
    for index in torch.nonzero(mismatched)[:max_print]:
        at = tuple(index.tolist())
        details.append(f"ERROR AT {at}: {received[at]} {expected[at]}")
    if count > max_print:
        details.append(f"... and {count - max_print} more mismatched elements.")
    return details


def match_reference(data, output, reference, rtol=1e-05, atol=1e-08) -> tuple[bool, str]:
    """The usual check_implementation: compare with the reference's output on the same data."""
    expected = reference(data)
    reasons = verbose_allclose(output, expected, rtol=rtol, atol=atol)
    if reasons:
        return False, "mismatch found! custom implementation doesn't match reference: " + " ".join(reasons)
    return True, ""


def make_match_reference(reference, **kwargs):
    def wrapped(data, output):
        return match_reference(data, output, reference=reference, **kwargs)
    return wrapped


class DeterministicContext:
    """cuDNN deterministic, no TF32, deterministic algorithms: for references whose result must not vary."""

    def __enter__(self):
        self.cublas = os.environ.get("CUBLAS_WORKSPACE_CONFIG", "")
        self.allow_tf32 = torch.backends.cudnn.allow_tf32
        self.deterministic = torch.backends.cudnn.deterministic
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.deterministic = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        torch.backends.cudnn.allow_tf32 = self.allow_tf32
        torch.backends.cudnn.deterministic = self.deterministic
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = self.cublas
