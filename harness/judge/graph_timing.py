"""CUDA-graph replay time of one call, for tiny shapes (measuring.md section 5, step 9).

Below ~20 us a call's event time is mostly fixed cost: the Python launch, the event pair. Replaying the
call from a CUDA graph removes the host side, so the GPU time of the kernels themselves shows. The
method, per shape (``graph_replay_us``):

1. Clone the input ``CALLS_PER_GRAPH`` times (K static input sets) and warm the kernel up on a side
   stream, one call per set (torch asks for a warm-up on the capture stream before capturing).
2. Capture two graphs on that side stream: the *kernel graph* ``K x (flush L2; custom_kernel(set_i))``
   and the *flush graph* ``K x flush L2``. Distinct input sets keep a kernel that caches by input
   identity from capturing its work only once.
3. Per round: ``refill`` every set with fresh values, keep a pristine copy of each, replay the kernel
   graph and then the flush graph between CUDA events, and check all K outputs against their pristine
   inputs with ``check``.
4. ``per_call_us = (median kernel-graph replay - median flush-graph replay) / K``: cold L2 like the
   event-timed loop, without host launch cost.

A kernel that cannot be captured (it synchronises, reads values on the host, launches work on a
stream it never joins, runs on the CPU, or raises) gets ``None`` and a log line: graph timing is extra
information and never fails an evaluation. A graph whose outputs do not match the reference comes back
with ``checked=False``: what it replays is not the computation (work done on the host at capture time,
or cached), so its time must not be reported.

How the worker calls it (``harness/judge/modes.py``), after a shape's timed loop::

    bind_torch()            # in the child: after make_timer, before the submission is imported
    ...
    if statistics.median(samples_us) < GRAPH_THRESHOLD_US:
        fresh_calls = itertools.count(call)            # call numbers the shape has not used yet
        timing = graph_replay_us(
            ctx.kernel, data,                           # data: any input of the shape, as a template
            refill=lambda static: copy_into(static, _fresh_input(ctx, spec, next(fresh_calls), during)[0]),
            check=lambda pristine, output: checking.run_checker(ctx.reference.check, pristine, output))
        # then ctx.guard.tampered(), as after any call; send timing.per_call_us when timing.checked

``refill(static)`` must write never-seen values into one static input; ``check(pristine, output)``
gets a copy of exactly the values the replayed call read, so a problem's ``check_implementation``
fits as it is. ``ShapeStats.graph_us`` carries the result; ``docs/timing.md`` describes the method.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from harness.device import l2_cache_bytes
from harness.failures import summary
from harness.timing import MIN_FLUSH_BYTES

log = logging.getLogger(__name__)

GRAPH_THRESHOLD_US = 20.0  # shapes whose event-timed median is below this also get a graph time
CALLS_PER_GRAPH = 10  # K: calls (and input sets) captured in one kernel graph


@dataclass(frozen=True)
class GraphTiming:
    """Per-call time of a shape from graph replays, in microseconds."""

    per_call_us: float  # (median kernel-graph replay - median flush-graph replay) / calls per graph
    replays: int  # kernel calls timed inside graph replays
    checked: bool  # every replayed call's output matched the reference on fresh values


class _GraphReplayer:
    """The torch callables graph timing uses, bound when built, as ``harness.timing.CudaTimer`` does.

    Built by ``bind_torch()``; when that runs before the submission is imported, a submission that
    reassigns ``torch.cuda.Event.elapsed_time``, ``torch.cuda.synchronize`` and the like changes nothing
    here.
    """

    def __init__(self) -> None:
        import torch

        graph = torch.cuda.CUDAGraph
        event = torch.cuda.Event
        self._tensor = torch.Tensor
        self._new_graph = graph
        self._capture_begin = graph.capture_begin
        self._capture_end = graph.capture_end
        self._replay = graph.replay
        self._new_stream = torch.cuda.Stream
        self._on_stream = torch.cuda.stream
        self._current_stream = torch.cuda.current_stream
        self._new_event = event
        self._record = event.record
        self._elapsed_ms = event.elapsed_time
        self._wait = event.synchronize
        self._synchronize = getattr(torch._C, "_cuda_synchronize", torch.cuda.synchronize)
        self._zero = torch.Tensor.zero_
        self._empty = torch.empty
        self._int32 = torch.int32
        self._flush: Any = None

    def is_cuda_data(self, data: Any) -> bool:
        return any(tensor.is_cuda for tensor, _ in _matching_tensors(data, data, self._tensor))

    def measure(
        self,
        kernel: Callable[[Any], Any],
        data: Any,
        refill: Callable[[Any], None],
        check: Callable[[Any, Any], tuple[bool, str]],
        replays: int,
    ) -> GraphTiming | None:
        from harness.judge.checking import clone_data

        calls = min(CALLS_PER_GRAPH, replays)
        if self._flush is None:
            self._flush = self._empty(max(MIN_FLUSH_BYTES, 2 * l2_cache_bytes()) // 4, dtype=self._int32, device="cuda")
        inputs = [clone_data(data) for _ in range(calls)]
        try:
            kernel_graph, flush_graph, outputs = self._capture_graphs(kernel, inputs)
        except Exception as exc:
            log.info("graph timing skipped: custom_kernel could not be captured in a CUDA graph (%s)", summary(exc))
            self._settle()
            return None

        kernel_us, flush_us = [], []
        checked = True
        for _ in range(math.ceil(replays / calls)):
            pristine = []
            for static in inputs:
                refill(static)
                pristine.append(clone_data(static))
            kernel_us.append(self._time_replay(kernel_graph))
            flush_us.append(self._time_replay(flush_graph))
            if (failure := _first_failure(check, pristine, outputs)) is not None:
                log.warning("graph timing: a replayed call's output does not match the reference (%s)", failure)
                checked = False
                break
        per_call_us = (statistics.median(kernel_us) - statistics.median(flush_us)) / calls
        if not checked:  # the replays did not compute the output: say so, whatever they took
            return GraphTiming(per_call_us=max(per_call_us, 0.0), replays=len(kernel_us) * calls, checked=False)
        if not (math.isfinite(per_call_us) and per_call_us > 0):
            log.info("graph timing skipped: the call's time (%.3f us) is lost in the flush's noise", per_call_us)
            return None
        return GraphTiming(per_call_us=per_call_us, replays=len(kernel_us) * calls, checked=True)

    def _capture_graphs(self, kernel: Callable[[Any], Any], inputs: list[Any]) -> tuple[Any, Any, list[Any]]:
        """Warm up on a side stream, then capture the kernel graph and the flush graph on it."""
        outputs: list[Any] = []

        def calls_behind_flushes() -> None:
            for static in inputs:
                self._zero(self._flush)
                outputs.append(kernel(static))

        def flushes_only() -> None:
            for _ in inputs:
                self._zero(self._flush)

        side = self._new_stream()
        self._synchronize()
        with self._on_stream(side):  # torch: warm up on the capture stream before capturing
            for static in inputs:
                kernel(static)
        self._synchronize()
        return self._capture(side, calls_behind_flushes), self._capture(side, flushes_only), outputs

    def _capture(self, stream: Any, body: Callable[[], None]) -> Any:
        """A graph of what ``body`` launches on ``stream``; the capture is always ended, also on error."""
        graph = self._new_graph()
        with self._on_stream(stream):
            self._capture_begin(graph)
            try:
                body()
            except BaseException:
                with contextlib.suppress(Exception):  # the capture is invalid anyway: report body's error
                    self._capture_end(graph)
                raise
            self._capture_end(graph)
        self._synchronize()
        return graph

    def _time_replay(self, graph: Any) -> float:
        """One replay between events on the current stream, in us.

        The zero before the start event keeps the GPU busy while the host launches the graph, so the
        launch's host time stays outside the interval.
        """
        start, end = self._new_event(enable_timing=True), self._new_event(enable_timing=True)
        stream = self._current_stream()
        self._synchronize()
        self._zero(self._flush)
        self._record(start, stream)
        self._replay(graph)
        self._record(end, stream)
        self._wait(end)
        return self._elapsed_ms(start, end) * 1000

    def _settle(self) -> None:
        """After a failed capture: wait for the device, so the caller continues from an idle GPU."""
        try:
            self._synchronize()
        except Exception as exc:
            log.warning("the device did not settle after a failed graph capture: %s", summary(exc))


@functools.cache
def bind_torch() -> _GraphReplayer | None:
    """Bind the torch callables graph timing uses; None when torch or a CUDA device is missing.

    Call it in the evaluation's own process before the submission is imported (next to ``make_timer``);
    later calls return the same binding. It initialises CUDA when a device is present, so never call it
    in a fork-server parent.
    """
    try:
        import torch
    except ImportError:
        return None
    return _GraphReplayer() if torch.cuda.is_available() else None


def graph_replay_us(
    kernel: Callable[[Any], Any],
    data: Any,
    refill: Callable[[Any], None],
    check: Callable[[Any, Any], tuple[bool, str]],
    *,
    replays: int = 200,
) -> GraphTiming | None:
    """Per-call time of ``kernel`` replayed from a CUDA graph, cold L2; None when it cannot be measured.

    ``data`` is a template of the input (tensors in tuples, lists and dicts; cloned into the static
    buffers, never written); ``refill(static)`` writes fresh values into one static input in place
    (``copy_into`` helps); ``check(pristine, output)`` returns ``(ok, message)`` for one call's output
    given a copy of the input it read. ``replays`` is the number of kernel calls to time (rounded up to
    whole graphs). The module docstring has the method and a calling example.
    """
    if replays < 1:
        raise ValueError(f"replays must be at least 1, not {replays}.")
    replayer = bind_torch()
    if replayer is None:
        log.info("graph timing skipped: no CUDA device")
        return None
    if not replayer.is_cuda_data(data):
        log.info("graph timing skipped: the input holds no CUDA tensor")
        return None
    try:
        return replayer.measure(kernel, data, refill, check, replays)
    except Exception:
        log.exception("graph timing failed; the shape keeps its event-timed result only")
        return None


def copy_into(static: Any, fresh: Any) -> None:
    """Copy every tensor of ``fresh`` into the tensor at the same place in ``static`` (same structure)."""
    import torch

    for target, source in _matching_tensors(static, fresh, torch.Tensor):
        target.copy_(source)


def _matching_tensors(static: Any, fresh: Any, tensor_type: type) -> Iterator[tuple[Any, Any]]:
    """Pairs of tensors at the same place in two nested tuple/list/dict structures."""
    if isinstance(static, tensor_type):
        if not isinstance(fresh, tensor_type):
            raise ValueError(f"expected a tensor, found a {type(fresh).__name__}.")
        yield static, fresh
    elif isinstance(static, (tuple, list)):
        if not isinstance(fresh, (tuple, list)) or len(fresh) != len(static):
            raise ValueError("the two inputs do not have the same structure.")
        for item_static, item_fresh in zip(static, fresh, strict=True):
            yield from _matching_tensors(item_static, item_fresh, tensor_type)
    elif isinstance(static, dict):
        if not isinstance(fresh, dict) or fresh.keys() != static.keys():
            raise ValueError("the two inputs do not have the same keys.")
        for key, value in static.items():
            yield from _matching_tensors(value, fresh[key], tensor_type)


def _first_failure(
    check: Callable[[Any, Any], tuple[bool, str]], pristine: list[Any], outputs: list[Any]
) -> str | None:
    """The first check failure's message over the calls of one replay, or None when all passed."""
    for index, (inputs, output) in enumerate(zip(pristine, outputs, strict=True)):
        try:
            ok, message = check(inputs, output)
        except Exception as exc:
            ok, message = False, f"the checker raised {summary(exc)}"
        if not ok:
            return f"call {index + 1}: {message or 'rejected'}"
    return None
