"""Seconds the submission's process spends compiling, reported as ``compile_s`` apart from any timing.

Three compilers cover what Python submissions use:

* ``torch.utils.cpp_extension.load_inline`` and ``load`` (inline CUDA and C++): the wall time of each
  call, measured by wrappers that ``CompileClock.install`` puts in place before the submission is imported;
* Triton's JIT: ``triton.knobs.compilation.listener`` (Triton 3.4 and later) reports each compile's time;
* ``torch.compile``: dynamo's own accounting, read at the end when the submission used it.

A compile nested in another (the Triton kernels torch.compile generates, a Triton kernel built while an
extension loads) is counted once, by the outer one. The wrappers only measure; they change no behaviour.
"""

from __future__ import annotations

import functools
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_clock = time.perf_counter
_EXTENSION_LOADERS = ("load_inline", "load")


class CompileClock:
    """Adds up compile seconds; ``on_compile`` is told when an extension build starts (for progress)."""

    def __init__(self, on_compile: Callable[[], None] | None = None) -> None:
        self._on_compile = on_compile or (lambda: None)
        self._seconds = 0.0
        self._depth = 0  # extension builds in progress: what they trigger inside is theirs
        self._dynamo_from = 0.0  # torch.compile's seconds before this clock was installed: not this clock's

    def install(self) -> CompileClock:
        self._dynamo_from = _dynamo_seconds()
        self._wrap_extension_loaders()
        self._listen_to_triton()
        return self

    def seconds(self) -> float:
        return self._seconds + max(0.0, _dynamo_seconds() - self._dynamo_from)

    def _wrap_extension_loaders(self) -> None:
        try:
            from torch.utils import cpp_extension
        except ImportError:
            return
        for name in _EXTENSION_LOADERS:
            if callable(original := getattr(cpp_extension, name, None)):
                setattr(cpp_extension, name, self._timed(original))

    def _timed(self, build: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(build)
        def timed_build(*args: Any, **kwargs: Any) -> Any:
            outermost = self._depth == 0 and not _inside_torch_compile()
            if outermost:
                self._on_compile()
            self._depth += 1
            started = _clock()
            try:
                return build(*args, **kwargs)
            finally:
                self._depth -= 1
                if outermost:
                    self._seconds += _clock() - started

        return timed_build

    def _listen_to_triton(self) -> None:
        knobs = getattr(sys.modules.get("triton"), "knobs", None)
        compilation = getattr(knobs, "compilation", None)
        if compilation is None or not hasattr(compilation, "listener"):
            return  # Triton absent, or older than 3.4: its compiles go uncounted
        previous = compilation.listener

        def listener(*, times: Any, **details: Any) -> None:
            if self._depth == 0 and not _inside_torch_compile():
                self._seconds += getattr(times, "total", 0) / 1e6  # Triton reports microseconds
            if previous is not None:
                previous(times=times, **details)

        compilation.listener = listener


def _inside_torch_compile() -> bool:
    guards = sys.modules.get("torch._guards")
    try:
        return guards is not None and guards.CompileContext.current_compile_id() is not None
    except Exception:  # an internal API: if it moves, count rather than fail
        return False


def used_torch_compile() -> bool:
    """True once torch.compile has compiled anything in this process (it may then replay CUDA graphs of its own)."""
    return _dynamo_seconds() > 0


def _dynamo_seconds() -> float:
    """Wall seconds torch.compile spent compiling in this process; 0 when it was never used."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return 0.0
    try:
        if hasattr(utils, "calculate_time_spent"):
            spent = utils.calculate_time_spent()
            return float(spent.get("total_wall_time", spent.get("entire_frame_compile", 0.0)))
        return float(sum(utils.compilation_time_metrics.get("_compile.compile_inner", [])))
    except Exception as exc:  # internal accounting: report 0 rather than fail the evaluation
        log.warning("torch.compile's compile time is unreadable: %s", exc)
        return 0.0
