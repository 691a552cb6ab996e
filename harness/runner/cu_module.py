"""The worker's side of a ``lang: cu`` evaluation: the built module, driven through its C interface.

The module (``harness/builds/cu_driver.cu`` compiled with the problem's reference and the submission) exposes
``generate_input``, ``check_implementation`` and ``custom_kernel`` over opaque ``input_t`` / ``output_t``
objects. This module wraps them as the ``harness.judge.modes.Reference`` and kernel that the Python modes already
drive, so a ``.cu`` submission is timed, checked and reported by exactly the same code as a Python one:
inputs are ``CuValue`` handles (cloned by the C++ copy constructor for the checker's pristine copy), the
kernel is a plain call into the library, and the problem's checker answers ``(passed, message)``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.problem import Opaque

MESSAGE_BYTES = 64 * 1024
SEED_BITS = 31  # public CUDA references take ``int seed``: ranked seeds are folded into its range


class CuError(RuntimeError):
    """A C++ exception thrown inside the module (its what()), e.g. a CUDA error from CUDA_CHECK."""


class CuValue(Opaque):
    """An ``input_t`` or ``output_t`` owned by the module; freed with the Python object."""

    def __init__(self, module: CuModule, pointer: int, kind: str) -> None:
        self._module, self.pointer, self.kind = module, pointer, kind

    def clone(self) -> CuValue:
        if self.kind != "input":
            raise TypeError("only inputs are copied")
        return CuValue(self._module, self._module.call("kr_copy_input", ctypes.c_void_p(self.pointer)), "input")

    def __del__(self) -> None:
        if self.pointer:
            free = self._module.lib.kr_free_input if self.kind == "input" else self._module.lib.kr_free_output
            free(ctypes.c_void_p(self.pointer))
            self.pointer = 0

    def __repr__(self) -> str:
        return f"<{self.kind}_t at {self.pointer:#x}>"


class CuModule:
    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        self.lib.kr_argument_name.restype = ctypes.c_char_p
        self.lib.kr_last_error.restype = ctypes.c_char_p
        for name in ("kr_free_input", "kr_free_output"):
            getattr(self.lib, name).argtypes = [ctypes.c_void_p]
        self.arguments = [self.lib.kr_argument_name(i).decode() for i in range(self.lib.kr_argument_count())]

    def call(self, name: str, *arguments: Any) -> int:
        """Call an entry that makes an object; its pointer, or CuError with what the C++ code threw."""
        made = ctypes.c_void_p()
        if getattr(self.lib, name)(*arguments, ctypes.byref(made)) != 0:
            raise CuError(self.lib.kr_last_error().decode(errors="replace"))
        return int(made.value or 0)

    def generate_input(self, **spec: Any) -> CuValue:
        if missing := [name for name in self.arguments if name not in spec]:
            raise ValueError(f"the spec {spec} lacks {', '.join(missing)}, which generate_input takes (task.h)")
        if extra := [name for name in spec if name not in self.arguments]:
            raise ValueError(
                f"the spec has {', '.join(extra)}, which generate_input does not take (task.h's "
                f"ArgumentNames: {', '.join(self.arguments)})"
            )
        values = [_text(name, spec[name]) for name in self.arguments]
        array = (ctypes.c_char_p * len(values))(*(v.encode() for v in values))
        return CuValue(self, self.call("kr_generate_input", array), "input")

    def custom_kernel(self, data: CuValue) -> CuValue:
        if not isinstance(data, CuValue) or data.kind != "input":
            raise TypeError("custom_kernel takes the input generate_input made")
        return CuValue(self, self.call("kr_custom_kernel", ctypes.c_void_p(data.pointer)), "output")

    def check(self, pristine: CuValue, output: CuValue) -> tuple[bool, str]:
        passed, message = ctypes.c_int(0), ctypes.create_string_buffer(MESSAGE_BYTES)
        if (
            self.lib.kr_check(
                ctypes.c_void_p(pristine.pointer),
                ctypes.c_void_p(output.pointer),
                ctypes.byref(passed),
                message,
                ctypes.c_size_t(MESSAGE_BYTES),
            )
            != 0
        ):
            raise CuError(self.lib.kr_last_error().decode(errors="replace"))
        text = message.value.decode(errors="replace")
        return bool(passed.value), text or ("" if passed.value else "check_implementation failed the output")

    def functions(
        self,
    ) -> tuple[Callable[..., Any], Callable[[Any], Any], Callable[[Any, Any], tuple[bool, str]], Callable[[Any], Any]]:
        """(generate_input, ref_kernel, check, custom_kernel) for ``harness.judge.modes``. The CUDA format's checker
        runs the reference itself, so the harness has no reference output to look at: ref_kernel gives None."""
        return self.generate_input, _no_reference_output, self.check, self.custom_kernel


def _no_reference_output(data: Any) -> None:
    return None


def _text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if name == "seed" and isinstance(value, int):
        return str(value % 2**SEED_BITS)
    return str(value)
