"""Per-call timers: CUDA events behind an L2 flush on the GPU, ``perf_counter_ns`` on the CPU.

The worker builds its timer before it imports the submission. Every function and method a timer calls
while timing (event record / elapsed time / synchronize, device synchronize, the flush's ``zero_``, the
host clock) is bound to the timer when it is built, so a submission that later reassigns
``torch.cuda.Event.elapsed_time``, ``torch.cuda.synchronize``, ``time.perf_counter_ns`` and the like
changes nothing about what the timer measures. The Event methods bound are torch's Python wrappers;
they reach the C implementation through ``super()``, which a submission cannot reassign.

Procedure and defaults: ``docs/timing.md``.
"""

from __future__ import annotations

import abc
import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from harness.device import l2_cache_bytes

T = TypeVar("T")

MIN_FLUSH_BYTES = 256 * 1024 * 1024  # never flush less than triton's 256 MiB
# After the flush, a spin kernel keeps the GPU busy this much longer before the start event runs, so a
# slow host launch (a library's dispatch on a busy VM core) is hidden instead of timed. Measured on an
# H200: without it, 1 fresh process in 12 read every matmul shape 12-38 us slower (docs/benchmarks.md).
LAUNCH_HIDE_US = 100.0
BUSY_BATCH = 20  # flushes queued per check of the warm-up's deadline (~2 ms on an H100)


@dataclass
class CallTiming:
    """One timed call, in microseconds (the clock in MHz)."""

    event_us: float  # start -> end of the call on the timing stream (the ranked time)
    sync_us: float  # start -> a marker after a device-wide synchronize; equals event_us on CPU
    flush_us: float = 0.0  # CUDA: the L2 flush before the call; 0 on CPU
    clock_mhz: float = 0.0  # CUDA: the SM clock during the launch-hiding spin just before the call; 0 on CPU
    host_us: float = 0.0  # the host's time inside fn(): near event_us when the call waits on the device


class Timer(abc.ABC):
    """Times one call at a time; build it before the submission is imported.

    ``watch(checks)`` wraps every call in ``checks()``, a context manager entered before and left after the
    timed interval (``harness.runner.monitor``); it may raise to end the evaluation.
    """

    device: str
    _checks: Callable[[], contextlib.AbstractContextManager[None]] = staticmethod(contextlib.nullcontext)

    def watch(self, checks: Callable[[], contextlib.AbstractContextManager[None]]) -> None:
        self._checks = checks

    @abc.abstractmethod
    def time_call(self, fn: Callable[[], T]) -> tuple[T, CallTiming]:
        """Call ``fn`` once inside the timed interval; return its result and the timing."""

    def time_host_call(self, fn: Callable[[], T]) -> tuple[T, CallTiming]:
        """Time a call whose output lives on the host with the host's clock (the device's work included)."""
        return self.time_call(fn)

    @abc.abstractmethod
    def untimed(self, fn: Callable[[], T]) -> T:
        """Call ``fn`` and wait until the device is idle (warm-up and first calls)."""

    @abc.abstractmethod
    def busy(self, seconds: float) -> None:
        """Keep the device busy for about ``seconds`` so its clocks leave idle."""


class CpuTimer(Timer):
    """Host wall-clock timing with ``time.perf_counter_ns``; CPU work is finished when ``fn`` returns."""

    device = "cpu"

    def __init__(self) -> None:
        self._clock_ns = time.perf_counter_ns

    def time_call(self, fn: Callable[[], T]) -> tuple[T, CallTiming]:
        with self._checks():
            start = self._clock_ns()
            out = fn()
            elapsed_us = (self._clock_ns() - start) / 1000
        return out, CallTiming(event_us=elapsed_us, sync_us=elapsed_us, host_us=elapsed_us)

    def untimed(self, fn: Callable[[], T]) -> T:
        with self._checks():
            return fn()

    def busy(self, seconds: float) -> None:
        """Nothing to do: a CPU leaves idle clocks with the first timed call itself."""


class CudaTimer(Timer):
    """CUDA-event timing of one call behind an L2 flush, with a device-wide post-sync marker.

    Per call: device synchronize; record flushed-from; flush L2 by ``zero_()`` of a buffer of
    max(256 MiB, 2 x L2) on the current stream; record spin-from; a spin kernel of ``LAUNCH_HIDE_US``;
    record start; ``fn()``; record end; device synchronize; record post and wait for it.
    ``event_us`` is start -> end, ``sync_us`` start -> post: work ``fn`` left on other streams shows up
    only in ``sync_us`` (see ``harness.stats.escaped_timing``). Two diagnostics come free: the flush's
    time (a probe of memory speed) and the SM clock, as the spin's known cycle count over its duration.

    The five events are reused across calls. That is safe because each call ends with the post event
    complete (hence all others too, as they precede it on the same stream and a device-wide synchronize
    separates them), every reading is taken before the method returns, and re-recording a completed
    event simply replaces what it captured.
    """

    device = "cuda"

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(
                "CUDA timing was requested but this machine has no usable CUDA device; "
                "run on a GPU machine or choose the CPU device."
            )
        event = torch.cuda.Event
        self._record = event.record
        self._elapsed_ms = event.elapsed_time
        self._wait = event.synchronize
        self._synchronize = getattr(torch._C, "_cuda_synchronize", torch.cuda.synchronize)
        self._zero = torch.Tensor.zero_
        self._clock_ns = time.perf_counter_ns
        self._stream = torch.cuda.current_stream()
        self.flush_bytes = max(MIN_FLUSH_BYTES, 2 * l2_cache_bytes())
        self._flush = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device="cuda")
        self._flushed_from, self._spin_from, self._start, self._end, self._post = (
            event(enable_timing=True) for _ in range(5)
        )
        self._spin = torch.cuda._sleep
        clock_khz = getattr(torch.cuda.get_device_properties(self._stream.device), "clock_rate", 0) or 2_000_000
        self._spin_cycles = int(LAUNCH_HIDE_US * clock_khz / 1000)

    def time_call(self, fn: Callable[[], T]) -> tuple[T, CallTiming]:
        with self._checks():
            self._synchronize()
            self._record(self._flushed_from, self._stream)
            self._zero(self._flush)
            self._record(self._spin_from, self._stream)
            self._spin(self._spin_cycles)
            self._record(self._start, self._stream)
            host_from = self._clock_ns()
            out = fn()
            host_us = (self._clock_ns() - host_from) / 1000
            self._record(self._end, self._stream)
            self._synchronize()
            self._record(self._post, self._stream)
            self._wait(self._post)
        spin_ms = self._elapsed_ms(self._spin_from, self._start)
        return out, CallTiming(
            event_us=self._elapsed_ms(self._start, self._end) * 1000,
            sync_us=self._elapsed_ms(self._start, self._post) * 1000,
            flush_us=self._elapsed_ms(self._flushed_from, self._spin_from) * 1000,
            clock_mhz=self._spin_cycles / (spin_ms * 1000) if spin_ms > 0 else 0.0,
            host_us=host_us,
        )

    def time_host_call(self, fn: Callable[[], T]) -> tuple[T, CallTiming]:
        """``perf_counter_ns`` from an idle, flushed device to the device idle again after ``fn``.

        For outputs that live on the host: work done on the host alone never reaches the stream, so events
        would see only what outlasts the launch-hiding spin. Host launch costs count here, as they do in
        GPU MODE's host-timed problems.
        """
        with self._checks():
            self._synchronize()
            self._zero(self._flush)
            self._synchronize()
            start = self._clock_ns()
            out = fn()
            host_us = (self._clock_ns() - start) / 1000
            self._synchronize()
            elapsed_us = (self._clock_ns() - start) / 1000
        return out, CallTiming(event_us=elapsed_us, sync_us=elapsed_us, host_us=host_us)

    def untimed(self, fn: Callable[[], T]) -> T:
        with self._checks():
            out = fn()
            self._synchronize()
        return out

    def busy(self, seconds: float) -> None:
        """Back-to-back flushes: full memory traffic, no library to load (a matmul would start cuBLAS in every
        evaluation, about 0.1-0.3 s, whether the submission uses it or not)."""
        deadline = self._clock_ns() + seconds * 1e9
        while self._clock_ns() < deadline:
            for _ in range(BUSY_BATCH):
                self._zero(self._flush)
            self._synchronize()


def make_timer(device: str) -> Timer:
    """The timer for ``device`` ("cuda" or "cpu"); build it before importing the submission."""
    if device == "cuda":
        return CudaTimer()
    if device == "cpu":
        return CpuTimer()
    raise ValueError(f"no timer for device {device!r}; use 'cuda' or 'cpu'.")


def run_call(timer: Timer, fn: Callable[[], T], timed: bool, host: bool) -> tuple[T, CallTiming]:
    """``fn`` once: untimed (waiting for the device), timed with the host's clock (``host``), or timed."""
    if not timed:
        return timer.untimed(fn), CallTiming(0.0, 0.0)
    return timer.time_host_call(fn) if host else timer.time_call(fn)


def calibrate_sync_gap(timer: Timer, calls: int = 50) -> float:
    """Median ``sync_us - event_us`` of an empty call: the gap an honest submission shows, in us."""
    if calls < 1:
        raise ValueError(f"calls must be at least 1, not {calls}.")
    gaps = []
    for _ in range(calls):
        _, timing = timer.time_call(_nothing)
        gaps.append(timing.sync_us - timing.event_us)
    return statistics.median(gaps)


def warm_up_device(timer: Timer, seconds: float = 0.2) -> None:
    """Lift GPU clocks out of idle with ~``seconds`` of busy work before anything is timed; CPU: no-op."""
    if seconds < 0:
        raise ValueError(f"seconds must not be negative, not {seconds}.")
    timer.busy(seconds)


def _nothing() -> None:
    return None
