"""The runner's side of a ``lang: cu`` evaluation: the submission's module and its ``custom_kernel``.

The module (``harness/builds/cu_runner.cu`` built with the submission and the problem's types, never with the
reference) is loaded when the judge says "import", under the call monitor like a Python submission's import (its
static initialisers are the submission's code). Each call's input arrives packed (``harness.cu_abi``); the runner
rebuilds ``input_t`` in the module's memory before its timer starts (``prepare``), times ``custom_kernel`` alone,
and packs the ``output_t`` for the judge after the timer stopped (``export``). The judge's clock sees all three:
it allows the two copies at the speed of its own copy of the inputs (``harness.judge.runner_link``).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from harness.cu_abi import CuHandle, CuLibrary


class CuKernel:
    def __init__(self, path: Path) -> None:
        self.library = CuLibrary(path)

    def prepare(self, data: Any) -> CuHandle:
        return self.library.read(data, "input")

    def __call__(self, data: CuHandle) -> CuHandle:
        """custom_kernel on the input, which it takes over (moved, as GPU MODE's eval.cu does)."""
        if not isinstance(data, CuHandle) or data.kind != "input":
            raise TypeError("custom_kernel takes the input the runner rebuilt")
        return CuHandle(self.library, self.library.call("kr_custom_kernel", ctypes.c_void_p(data.pointer)), "output")

    def export(self, output: CuHandle) -> dict[str, Any]:
        """The output packed for the judge; the caller frees the ``output_t`` once the answer is sent (freeing
        device memory waits for the GPU, which the judge's clock need not count)."""
        return self.library.pack(output)
