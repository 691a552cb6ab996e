"""What an empty call costs as the judge sees it, measured before the submission is imported.

Timed calls of the harness's own (a probe in, a fresh output like it back, through every step a real call takes),
made while the runner holds only the harness, so no code of the submission can recognise or answer them; and what
a byte moved adds to a call's spending. ``harness.judge.brackets`` turns them into the allowance of every shape.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any, Protocol

import torch

from harness.judge import brackets, judge_clock

CALLS = 40
# The calibration's input, in float32 elements. On the CPU small, so its transfer through the socket costs next to
# nothing; on CUDA as large as a typical output (8 MiB), so that the fresh output it shares back comes from the
# caching allocator's large pool and its own segment, as real outputs do: with a 1 KiB probe the exchange of honest
# calls of large shapes cost 0.4-0.7 ms more than the calibration on an H200, and read as untrusted time.
ELEMENTS = {"cpu": 256, "cuda": 2 * 2**20}
# On the CPU, what a byte costs is measured the way a call's spending is, in the job's CPU time: calls of a 2 MiB
# input (6 MiB moved: the input, the inputs back, a fresh output) against the empty ones, 35-50 ms in all. A socket's
# wall time per byte, the measure before, read 4-9 times the runner's real cost on a loaded machine (its threads wait
# for cores, which CPU time does not count), and a runner hid 6 ms of work per call in the difference.
BYTE_ELEMENTS = 2**19
BYTE_CALLS = 5


class _Timing(Protocol):
    sync_us: float
    event_us: float


class _Call(Protocol):
    """What of a call's answer (``harness.judge.runner_link.Answer``) the calibration reads: read-only, so an
    answer whose ``timing`` is a ``CallTiming`` (more than ``_Timing``) fits."""

    @property
    def spent_us(self) -> float: ...

    @property
    def payload_bytes(self) -> int: ...

    @property
    def timing(self) -> _Timing: ...


def allowance(call: Callable[..., _Call], device: str, calls: int = CALLS) -> brackets.Allowance:
    """The allowance from ``calls`` empty calls through ``call`` (the link's own) on ``device``."""
    empty = _calls(call, device, ELEMENTS.get(device, 256), calls)
    return brackets.allowance(
        [a.spent_us for a in empty],
        [a.timing.sync_us - a.timing.event_us for a in empty],
        device,
        _us_per_byte(call, device, empty),
    )


def _calls(call: Callable[..., _Call], device: str, elements: int, calls: int) -> list[_Call]:
    probe: Any = torch.zeros(elements, device=device)
    return [call(probe, timed=True, host=False, during="the calibration", calibration=True) for _ in range(calls)]


def _us_per_byte(call: Callable[..., _Call], device: str, empty: list[_Call]) -> float:
    """What moving a byte through the socket adds to a call's spending, in its currency: on the CPU the job's CPU
    time, from calls of a large input against ``empty``; on CUDA, where spending is the bracket, the wall time of
    the judge's own socket."""
    if device != "cpu":
        return judge_clock.socket_us_per_byte()
    large = _calls(call, device, BYTE_ELEMENTS, BYTE_CALLS)
    extra_us = statistics.median(a.spent_us for a in large) - statistics.median(a.spent_us for a in empty)
    extra_bytes = statistics.median(a.payload_bytes for a in large) - statistics.median(a.payload_bytes for a in empty)
    return max(0.0, extra_us / extra_bytes)
