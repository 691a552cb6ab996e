"""A built ``lang: cu`` module as either side drives it: its C interface, and its values as they cross processes.

A .cu submission makes two modules (``harness/builds/cu_judge.cu``, ``cu_runner.cu``; docs/cuda.md, "Two
modules"): the judge's makes and checks values, the runner's calls ``custom_kernel``. Between them a C++
``input_t`` or ``output_t`` travels as a **packed value**, ``{"host": bytes as a CPU uint8 tensor, "device":
[CUDA uint8 tensors]}``: plain tensors, so the transport, the judge's clock and its copies treat it as any Python
submission's input or output. Packing copies the value's device buffers into tensors of torch's allocator (the
module's own memory cannot be shared with the other process); reading builds a fresh value in the reader's
memory, every size checked against the bytes given (``harness/builds/cu_values.h``).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import torch

MESSAGE_BYTES = 64 * 1024
KINDS = ("input", "output")


class CuError(RuntimeError):
    """A C++ exception thrown inside the module (its what()), e.g. a CUDA error from CUDA_CHECK."""


class CuHandle:
    """An ``input_t`` or ``output_t`` owned by the module; freed with the Python object (or ``free``)."""

    def __init__(self, library: CuLibrary, pointer: int, kind: str) -> None:
        self._library, self.pointer, self.kind = library, pointer, kind

    def free(self) -> None:
        if self.pointer:
            getattr(self._library.lib, f"kr_free_{self.kind}")(ctypes.c_void_p(self.pointer))
            self.pointer = 0

    def __del__(self) -> None:
        self.free()

    def __repr__(self) -> str:
        return f"<{self.kind}_t at {self.pointer:#x}>"


class CuLibrary:
    """One built module, loaded into this process (its static initialisers run here)."""

    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        self.lib.kr_last_error.restype = ctypes.c_char_p
        self.lib.kr_packed_host.restype = ctypes.c_void_p
        for name in ("kr_packed_host_size", "kr_packed_segments", "kr_packed_segment_size"):
            getattr(self.lib, name).restype = ctypes.c_size_t
        self.lib.kr_packed_segment_size.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.lib.kr_packed_copy.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        for name in ("kr_free_input", "kr_free_output", "kr_free_packed"):
            getattr(self.lib, name).argtypes = [ctypes.c_void_p]

    def call(self, name: str, *arguments: Any) -> int:
        """Call an entry that makes an object; its pointer, or CuError with what the C++ code threw."""
        made = ctypes.c_void_p()
        if getattr(self.lib, name)(*arguments, ctypes.byref(made)) != 0:
            raise CuError(self.lib.kr_last_error().decode(errors="replace"))
        return int(made.value or 0)

    def pack(self, value: CuHandle) -> dict[str, Any]:
        """``value`` as a packed value: its host bytes, and a copy of each device buffer in torch's memory."""
        packed = self.call(f"kr_pack_{value.kind}", ctypes.c_void_p(value.pointer))
        try:
            size = self.lib.kr_packed_host_size(ctypes.c_void_p(packed))
            host = torch.empty(size, dtype=torch.uint8)
            if size:
                ctypes.memmove(host.data_ptr(), self.lib.kr_packed_host(ctypes.c_void_p(packed)), size)
            device = []
            for index in range(self.lib.kr_packed_segments(ctypes.c_void_p(packed))):
                segment = torch.empty(
                    self.lib.kr_packed_segment_size(ctypes.c_void_p(packed), index), dtype=torch.uint8, device="cuda"
                )
                if self.lib.kr_packed_copy(ctypes.c_void_p(packed), index, ctypes.c_void_p(segment.data_ptr())) != 0:
                    raise CuError(self.lib.kr_last_error().decode(errors="replace"))
                device.append(segment)
        finally:
            self.lib.kr_free_packed(ctypes.c_void_p(packed))
        return {"host": host, "device": device}

    def read(self, value: Any, kind: str) -> CuHandle:
        """A fresh ``input_t`` or ``output_t`` from a packed value (the other process's word: checked here, and
        against its description in the module)."""
        if kind not in KINDS:
            raise ValueError(f"no {kind}_t in a module")
        host, device = unpacked(value)
        pointers = (ctypes.c_void_p * max(1, len(device)))(*(t.data_ptr() for t in device))
        sizes = (ctypes.c_size_t * max(1, len(device)))(*(t.numel() for t in device))
        return CuHandle(
            self,
            self.call(
                f"kr_read_{kind}",
                ctypes.c_void_p(host.data_ptr()),
                ctypes.c_size_t(host.numel()),
                pointers,
                sizes,
                ctypes.c_size_t(len(device)),
            ),
            kind,
        )


def unpacked(value: Any) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The parts of a packed value, or CuError saying what is wrong with it."""
    if not isinstance(value, dict) or set(value) != {"host", "device"}:
        raise CuError("the value is not a packed input_t or output_t")
    host, device = value["host"], value["device"]
    parts = isinstance(device, list) and all(_plain_bytes(t, "cuda") for t in device)
    if not _plain_bytes(host, "cpu") or not parts:
        raise CuError("a packed value's parts are not contiguous uint8 tensors on the CPU and the GPU")
    return host, device


def _plain_bytes(tensor: Any, device: str) -> bool:
    return (
        type(tensor) is torch.Tensor
        and tensor.dtype == torch.uint8
        and tensor.dim() == 1
        and tensor.is_contiguous()
        and tensor.device.type == device
    )
