"""Runtime checks around every call of ``custom_kernel``, run by the timer outside the timed interval.

Each names the catalogue entry it defeats (the shared notes' integrity.md, C1-C23):

* **Work left running** (C7): after a call returns, no other thread may still be running the submission's
  code, and no thread the submission started may still be alive. Threads a library starts for itself
  (torch.compile's compile pool) are neither, so they pass.
* **Persisting L2** (C19, CUDA): the context's persisting-L2 limit must stay where it was.

Stale reference memory (C4) and calls of the reference from the submission (C11, C16, C20) need no watch
any more: the reference never runs in the runner's process (``harness.runner.runner_process``).

Violations raise ``Verdict``; ``harness.failures.kernel_failure`` passes them through unchanged.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator

from harness.failures import Verdict
from harness.result import FailureKind
from harness.runner.guard import Guard

_current_frames = sys._current_frames
_get_ident = threading.get_ident
_original_start = threading.Thread.start
_CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
_MAX_STACK = 64  # frames looked at per thread
_THREADING_FILE = threading.__file__


class CallMonitor:
    """Checks every call of the submission (see the module docstring); one per evaluation."""

    def __init__(self, submission_file: str, device: str) -> None:
        self._file = submission_file
        self._main = _get_ident()
        self._started_here: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        self._l2_limit = _persisting_l2_reader() if device == "cuda" else None
        self._l2_baseline = self._l2_limit() if self._l2_limit else None

    def install(self, guard: Guard) -> None:
        """Note which threads the submission starts; the guard makes the hook itself tamper-evident."""
        monitor = self

        def start(thread: threading.Thread) -> None:
            if sys._getframe(1).f_code.co_filename == monitor._file:
                monitor._started_here.add(thread)
            _original_start(thread)

        threading.Thread.start = start  # type: ignore[method-assign,assignment]  # the patch is the point
        guard.watch(threading.Thread, ("start",), label="threading.Thread")

    @contextlib.contextmanager
    def watch(self) -> Iterator[None]:
        """Around each stretch of submitted code (its import, each call): checks after it."""
        yield
        self._check()

    def _check(self) -> None:
        if offender := self._running_thread():
            raise Verdict(
                FailureKind.ESCAPED_TIMING,
                f"custom_kernel returned while a thread it started was still "
                f"running ({offender}). That work happens outside the timed interval: finish it, and join "
                "every thread, before returning.",
            )
        if self._l2_limit is not None and (limit := self._l2_limit()) != self._l2_baseline:
            raise Verdict(
                FailureKind.TAMPERING,
                f"custom_kernel set aside {limit} bytes of persisting L2 cache, "
                "which survives the cache flush between timed calls. Leave the persisting-L2 limit alone.",
            )

    def _running_thread(self) -> str | None:
        """Where a thread is still working for the submission, or None."""
        started = {t.ident: t for t in list(self._started_here) if t.ident is not None}
        for ident, frame in _current_frames().items():
            if ident == self._main:
                continue
            if where := self._submission_frame(frame):
                return where
            if ident in started and _busy(frame):  # e.g. Thread(target=torch.mm, ...), no frame of ours
                return f"thread {started[ident].name!r}"
        return None

    def _submission_frame(self, frame: types.FrameType | None) -> str | None:
        for _ in range(_MAX_STACK):
            if frame is None:
                return None
            if frame.f_code.co_filename == self._file:
                return f"line {frame.f_lineno}, in {frame.f_code.co_name}"
            frame = frame.f_back
        return None


def _busy(frame: types.FrameType) -> bool:
    """A thread whose innermost frame is its target (or code outside threading), not its exit path."""
    return frame.f_code.co_filename != _THREADING_FILE or frame.f_code.co_name == "run"


def _persisting_l2_reader() -> Callable[[], int] | None:
    """Reads the current CUDA context's persisting-L2 limit through the driver; None when it cannot."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        get_limit = driver.cuCtxGetLimit
    except (OSError, AttributeError):
        return None
    get_limit.argtypes = (ctypes.POINTER(ctypes.c_size_t), ctypes.c_int)

    def read() -> int:
        value = ctypes.c_size_t(0)
        return int(value.value) if get_limit(ctypes.byref(value), _CU_LIMIT_PERSISTING_L2_CACHE_SIZE) == 0 else 0

    return read
