"""The judge's side of a ``lang: cu`` problem: its reference module's generate_input and checker.

The module (``harness/builds/cu_judge.cu`` built with the problem's files, never with the submission) makes each
input in C++ and hands it on packed (``harness.cu_abi``): the runner gets plain tensors through the same link,
clock and copies as a Python submission's, rebuilds ``input_t`` in its own module and calls ``custom_kernel``
there. The packed output it answers is read back here into a fresh ``output_t`` in the judge's memory, and the
problem's ``check_implementation`` judges it against the pristine input, read back the same way.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from harness.cu_abi import MESSAGE_BYTES, CuError, CuHandle, CuLibrary
from harness.failures import Verdict
from harness.judge import modes
from harness.result import FailureKind

REBUILD_SAMPLES = 3
SEED_BITS = 31  # public CUDA references take ``int seed``: ranked seeds are folded into its range


class CuReference:
    def __init__(self, path: Path) -> None:
        try:
            self.library = CuLibrary(path)
        except OSError as exc:
            raise Verdict(
                FailureKind.INVALID_PROBLEM,
                f"The problem's reference module could not be loaded ({exc}); tell the leaderboard's maintainers.",
            ) from None
        lib = self.library.lib
        lib.kr_argument_name.restype = ctypes.c_char_p
        self.arguments = [lib.kr_argument_name(i).decode() for i in range(lib.kr_argument_count())]
        self._rebuilds: dict[tuple[int, ...], float] = {}

    def functions(self) -> modes.Reference:
        """For ``harness.judge.modes``. The CUDA format's checker runs the reference itself, so there is no
        reference output to look at: ref_kernel gives None."""
        return modes.Reference(self.generate_input, _no_reference_output, self.check)

    def generate_input(self, **spec: Any) -> dict[str, Any]:
        if missing := [name for name in self.arguments if name not in spec]:
            raise ValueError(f"the spec {spec} lacks {', '.join(missing)}, which generate_input takes (task.h)")
        if extra := [name for name in spec if name not in self.arguments]:
            raise ValueError(
                f"the spec has {', '.join(extra)}, which generate_input does not take (task.h's "
                f"ArgumentNames: {', '.join(self.arguments)})"
            )
        values = [_text(name, spec[name]) for name in self.arguments]
        array = (ctypes.c_char_p * len(values))(*(v.encode() for v in values))
        made = CuHandle(self.library, self.library.call("kr_generate_input", array), "input")
        return self.library.pack(made)

    def rebuild_us(self, packed: Any) -> float:
        """What rebuilding ``packed`` as an ``input_t`` costs (the runner's step before its timer: the module's own
        allocations and copies), measured here with the judge's own module and clock: the median of three, once per
        list of sizes. The runner cannot answer it; it runs between calls, on the judge's side."""
        key = (packed["host"].numel(), *(t.numel() for t in packed["device"]))
        if key not in self._rebuilds:
            times = []
            for _ in range(REBUILD_SAMPLES):
                torch.cuda.synchronize()
                started = time.perf_counter_ns()
                made = self.library.read(packed, "input")
                torch.cuda.synchronize()
                times.append((time.perf_counter_ns() - started) / 1000)
                made.free()
            self._rebuilds[key] = statistics.median(times)
        return self._rebuilds[key]

    def check(self, pristine: Any, output: Any) -> tuple[bool, str]:
        """The problem's checker on the pristine input and the runner's output, both rebuilt in this process."""
        data = self.library.read(pristine, "input")
        try:
            answer = self.library.read(output, "output")
        except CuError as exc:  # the runner's answer is not an output_t of this problem
            return False, f"the output could not be read as the problem's output_t ({exc})"
        passed, message = ctypes.c_int(0), ctypes.create_string_buffer(MESSAGE_BYTES)
        status = self.library.lib.kr_check(
            ctypes.c_void_p(data.pointer),
            ctypes.c_void_p(answer.pointer),
            ctypes.byref(passed),
            message,
            ctypes.c_size_t(MESSAGE_BYTES),
        )
        if status != 0:
            raise CuError(self.library.lib.kr_last_error().decode(errors="replace"))
        text = message.value.decode(errors="replace")
        return bool(passed.value), text or ("" if passed.value else "check_implementation failed the output")


def _no_reference_output(data: Any) -> None:
    return None


def _text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if name == "seed" and isinstance(value, int):
        return str(value % 2**SEED_BITS)
    return str(value)
