"""CUDA memory across the judge/runner boundary: IPC descriptions of the runner's storages, and their checked opening.

The runner shares (``share_cuda``); the judge maps (``open_cuda``), after checking every field of the description
against what it expects (``checked_cuda_description``: exactly torch's fields with exactly their types, on the
evaluation's device, of the size it asked for) and, once mapped, that the bytes lie inside the allocation the
handle opened. An empty storage has no memory to share and crosses as its device alone.
"""

from __future__ import annotations

import base64
import binascii
import ctypes
import functools
import re
from collections.abc import Callable
from typing import Any

import torch

from harness.transport import TransportError

# torch's CUDA IPC, as share_cuda hands it over (torch/csrc/CudaIPCTypes.h): the reference counter is a slot of a
# shared-memory file of 10,000 named by torch's process-wide handle; an IPC event handle is 64 bytes
_CUDA_KEYS = frozenset({"device", "handle", "size", "offset", "counter", "counter_offset", "event", "event_sync"})
_EMPTY_CUDA_KEYS = frozenset({"device", "size"})  # an empty storage: nothing to map
_IPC_COUNTERS = 10_000
_IPC_EVENT_BYTES = 64
_IPC_HANDLE_MOST = 4096  # a cudaIpcMemHandle (64 bytes) with torch's prefix, or an expandable segment's handles
_COUNTER_NAME = re.compile(rb"/torch_[0-9]+_[0-9]+_[0-9]+\Z")


def share_cuda(storage: torch.UntypedStorage) -> dict[str, Any]:
    """An IPC description of a CUDA storage of this process (the runner's side). An empty storage has no memory
    to share (torch gives it no handle): it crosses as its device alone."""
    if storage.nbytes() == 0:
        return {"device": int(storage.device.index or 0), "size": 0}
    device, handle, size, offset, counter, counter_offset, event, event_sync = storage._share_cuda_()
    return {
        "device": int(device),
        "handle": _b64(handle),
        "size": int(size),
        "offset": int(offset),
        "counter": _b64(counter),
        "counter_offset": int(counter_offset),
        "event": _b64(event),
        "event_sync": bool(event_sync),
    }


def open_cuda(shared: Any, size: int | None = None) -> torch.UntypedStorage:
    """Map a storage the runner shared (``share_cuda``); the current stream waits for the runner's work queued
    before it shared it. ``size``: the bytes the judge asked for (a staging buffer)."""
    device = torch.cuda.current_device()
    if isinstance(shared, dict) and set(shared) == _EMPTY_CUDA_KEYS and size in (None, 0):
        if shared["device"] != device or shared["size"] != 0:
            raise TransportError("a malformed CUDA memory description")
        return torch.UntypedStorage(0, device=f"cuda:{device}")
    fields = checked_cuda_description(shared, device, size)
    torch.cuda._lazy_init()
    try:
        storage = torch.UntypedStorage._new_shared_cuda(*fields)
    except RuntimeError as exc:
        raise TransportError(f"CUDA memory that cannot be opened ({exc})") from None
    if not _inside_mapping(storage.data_ptr(), fields[3], fields[2]):
        raise TransportError("CUDA memory described past the allocation it names")
    return storage


def checked_cuda_description(shared: Any, device: int, size: int | None) -> tuple[Any, ...]:
    """The arguments of torch's shared-CUDA constructor, from a runner's description that holds exactly
    ``share_cuda``'s fields with exactly their types, on ``device``, of the size the judge expects; anything
    else is refused before torch sees it (the counter names a file the judge opens and decrements a slot of)."""
    if not isinstance(shared, dict) or set(shared) != _CUDA_KEYS:
        raise TransportError("a malformed CUDA memory description")
    numbers = [shared[key] for key in ("device", "size", "offset", "counter_offset")]
    if not all(type(n) is int and 0 <= n < 2**63 for n in numbers) or type(shared["event_sync"]) is not bool:
        raise TransportError("a CUDA memory description whose numbers are not counts")
    if shared["device"] != device:
        raise TransportError("CUDA memory on another device than the evaluation's")
    if size is not None and shared["size"] != size:
        raise TransportError(f"CUDA memory of {shared['size']} bytes where the judge asked for {size}")
    if shared["counter_offset"] >= _IPC_COUNTERS:
        raise TransportError("a CUDA memory reference counter outside its file")
    handle, counter, event = (_unb64(shared[key]) for key in ("handle", "counter", "event"))
    if not 0 < len(handle) <= _IPC_HANDLE_MOST or len(event) != _IPC_EVENT_BYTES or not _COUNTER_NAME.match(counter):
        raise TransportError("a CUDA memory description with malformed handles")
    return (
        device,
        handle,
        shared["size"],
        shared["offset"],
        counter,
        shared["counter_offset"],
        event,
        shared["event_sync"],
    )


def _inside_mapping(pointer: int, offset: int, size: int) -> bool:
    """Whether ``size`` bytes at ``pointer`` lie in the one allocation mapped at ``pointer - offset`` (the
    runner's, opened by its handle): an offset past it would reach other memory of the judge's."""
    base, extent = ctypes.c_uint64(), ctypes.c_size_t()
    if _address_range()(ctypes.byref(base), ctypes.byref(extent), ctypes.c_uint64(pointer)) != 0:
        return False
    return base.value == pointer - offset and offset + size <= extent.value


@functools.cache
def _address_range() -> Callable[..., int]:
    """The driver's ``cuMemGetAddressRange``: which allocation an address belongs to (torch does not say)."""
    function = ctypes.CDLL("libcuda.so.1").cuMemGetAddressRange_v2
    function.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint64]
    function.restype = ctypes.c_int
    return function


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise TransportError("a CUDA memory description with malformed handles")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise TransportError("a CUDA memory description with malformed handles") from None


def overlaps(storage: torch.UntypedStorage, others: list[torch.UntypedStorage]) -> bool:
    """Whether ``storage``'s bytes share an address with any of ``others`` (the judge's mappings of one process's
    memory: torch maps a shared allocation once, so the same memory has the same addresses however it is named)."""
    start, end = storage.data_ptr(), storage.data_ptr() + storage.nbytes()
    return storage.nbytes() > 0 and any(
        o.nbytes() > 0 and start < o.data_ptr() + o.nbytes() and o.data_ptr() < end for o in others
    )
