"""Data between the judge and the runner: a private socket, JSON records, tensor memory beside them.

The judge (``harness.judge.runner_link``) and the runner (``harness.runner.runner_process``) are two processes of
one evaluation.
A message is a record (``harness.channel`` framing) whose optional ``"blobs"`` field lists the sizes of raw
byte blocks that follow it on the socket. Values cross as a description (``pack``) plus their tensors'
memory, one entry per distinct storage, so tensors that share memory on one side share it on the other:

* CPU storages travel as bytes;
* CUDA storages travel as CUDA IPC handles of memory the **runner** allocated (``share_cuda``/``open_cuda``):
  the judge maps the runner's memory and copies what it needs, and the runner never gets a handle to the
  judge's memory. Inputs are staged into runner-allocated buffers the same way (``harness.judge.runner_link``).

Decoding never imports anything and never unpickles: the judge reads a runner's answer as nested tuples,
lists, dicts, plain scalars and tensors of torch's own dtypes, or refuses it (``TransportError``). Only the
runner, whose process is the submission's anyway, turns a namedtuple back into its class.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import os
import socket
import struct
from collections.abc import Callable
from typing import Any

import torch

from harness.channel import MAX_RECORD_BYTES, encode

_BLOB = struct.Struct(">Q")
_HEADER = struct.Struct(">I")
_SCALARS = (int, float, bool, str, type(None))
MAX_DEPTH = 16


class TransportError(Exception):
    """The other side sent a message or a value this side does not accept."""


class Link:
    """One end of the judge-runner socket: blocking, whole messages."""

    def __init__(self, sock: socket.socket, max_bytes: int) -> None:
        self.sock = sock
        self.max_bytes = max_bytes  # the most blob bytes one message may carry
        self._owner = os.getpid()

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, record: dict[str, Any], blobs: list[bytes | memoryview] | None = None) -> None:
        """Send one message; a copy of this process (a fork of the submission's) ends instead, so that it cannot
        interleave its bytes with the owner's."""
        if os.getpid() != self._owner:
            os._exit(0)
        blobs = blobs or []
        self.sock.sendall(encode({**record, "blobs": [len(b) for b in blobs]} if blobs else record))
        for blob in blobs:
            self.sock.sendall(_BLOB.pack(len(blob)))
            self.sock.sendall(blob)

    def receive(self, timeout_s: float | None = None) -> tuple[dict[str, Any], list[bytearray]]:
        """The next message; EOFError when the other end closed, TimeoutError after ``timeout_s``."""
        self.sock.settimeout(timeout_s)
        try:
            (size,) = _HEADER.unpack(self._take(_HEADER.size))
            if size > MAX_RECORD_BYTES:
                raise TransportError(f"a record of {size} bytes, over the {MAX_RECORD_BYTES}-byte limit")
            try:
                record = json.loads(self._take(size))
            except ValueError as exc:
                raise TransportError(f"a record that is not JSON ({exc})") from None
            if not isinstance(record, dict):
                raise TransportError("a record that is not an object")
            sizes = record.get("blobs") or []
            if not isinstance(sizes, list) or not all(type(s) is int and s >= 0 for s in sizes):
                raise TransportError("a message with malformed blob sizes")
            if sum(sizes) > self.max_bytes:
                raise TransportError(f"a message of {sum(sizes)} bytes, over the {self.max_bytes}-byte limit")
            blobs = []
            for announced in sizes:
                if _BLOB.unpack(self._take(_BLOB.size))[0] != announced:
                    raise TransportError("a blob whose length differs from the one announced")
                blobs.append(self._take(announced))
            return record, blobs
        except TimeoutError:
            raise TimeoutError("no message in time") from None
        finally:
            with contextlib.suppress(OSError):
                self.sock.settimeout(None)

    def _take(self, size: int) -> bytearray:
        """Exactly ``size`` bytes from the socket, received in place."""
        out = bytearray(size)
        view, have = memoryview(out), 0
        while have < size:
            got = self.sock.recv_into(view[have:], size - have)
            if not got:
                raise EOFError("the other end closed the link")
            have += got
        return out

    def close(self) -> None:
        self.sock.close()


# ---- values ------------------------------------------------------------------------------------------


Storages = list[torch.UntypedStorage]


def pack(value: Any, storages: Storages, depth: int = 0) -> Any:
    """A JSON description of ``value``; its tensors' storages are appended to ``storages`` (deduplicated)."""
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor and not isinstance(value, torch.nn.Parameter):
            raise TransportError(f"a {type(value).__module__}.{type(value).__qualname__}, a tensor subclass")
        storage = value.untyped_storage()
        index = next((i for i, s in enumerate(storages) if _same(s, storage)), None)
        if index is None:
            index = len(storages)
            storages.append(storage)
        return {
            "tensor": {
                "storage": index,
                "offset": value.storage_offset(),
                "size": list(value.shape),
                "stride": list(value.stride()),
                "dtype": str(value.dtype).removeprefix("torch."),
            }
        }
    if depth >= MAX_DEPTH:
        raise TransportError("a value nested too deeply to hand over")
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {
            "namedtuple": [type(value).__module__, type(value).__qualname__],
            "items": [pack(item, storages, depth + 1) for item in value],
        }
    if isinstance(value, (tuple, list)):
        return {
            type(value).__name__ if type(value) in (tuple, list) else "list": [
                pack(item, storages, depth + 1) for item in value
            ]
        }
    if isinstance(value, dict):
        if not all(isinstance(key, (str, int)) for key in value):
            raise TransportError("a dict with keys other than strings and integers cannot be handed over")
        return {"dict": [[key, pack(item, storages, depth + 1)] for key, item in value.items()]}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, _SCALARS):
        return {"value": value}
    raise TransportError(f"a {type(value).__module__}.{type(value).__qualname__}, which cannot be handed over")


def unpack(meta: Any, storages: list[torch.UntypedStorage], rebuild_classes: bool = False, depth: int = 0) -> Any:
    """The value ``pack`` described, over ``storages``; namedtuples come back as their class only with
    ``rebuild_classes`` (the runner's side), else as plain tuples."""
    if not isinstance(meta, dict) or len(meta) not in (1, 2) or depth > MAX_DEPTH + 1:
        raise TransportError("a malformed value description")
    if "tensor" in meta:
        return _tensor(meta["tensor"], storages)
    if "namedtuple" in meta:
        items = tuple(unpack(item, storages, rebuild_classes, depth + 1) for item in _list(meta.get("items")))
        return _namedtuple(meta["namedtuple"], items) if rebuild_classes else items
    if "tuple" in meta or "list" in meta:
        listed = _list(meta.get("tuple", meta.get("list")))
        items = [unpack(item, storages, rebuild_classes, depth + 1) for item in listed]
        return tuple(items) if "tuple" in meta else items
    if "dict" in meta:
        pairs = _list(meta["dict"])
        if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], (str, int)) for p in pairs):
            raise TransportError("a malformed dict description")
        return {key: unpack(item, storages, rebuild_classes, depth + 1) for key, item in pairs}
    if "dtype" in meta:
        return _dtype(meta["dtype"])
    if "value" in meta and isinstance(meta["value"], _SCALARS):
        return meta["value"]
    raise TransportError("a value description of an unknown kind")


def cpu_blobs(storages: Storages) -> list[memoryview]:
    """The bytes of CPU storages, without copying."""
    return [memoryview(_bytes_view(s).numpy()) if s.nbytes() else memoryview(b"") for s in storages]


def cpu_storages(blobs: list[bytearray]) -> Storages:
    """Storages of this process holding ``blobs`` (the blobs' memory, no copy)."""
    return [torch.frombuffer(b, dtype=torch.uint8).untyped_storage() if b else torch.UntypedStorage(0) for b in blobs]


def share_cuda(storage: torch.UntypedStorage) -> dict[str, Any]:
    """An IPC description of a CUDA storage of this process (the runner's side)."""
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


def open_cuda(shared: dict[str, Any]) -> torch.UntypedStorage:
    """Map a storage the runner shared (``share_cuda``); the current stream waits for the runner's work queued
    before it shared it."""
    try:
        fields = (
            int(shared["device"]),
            _unb64(shared["handle"]),
            int(shared["size"]),
            int(shared["offset"]),
            _unb64(shared["counter"]),
            int(shared["counter_offset"]),
            _unb64(shared["event"]),
            bool(shared["event_sync"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise TransportError(f"a malformed CUDA memory handle ({exc})") from None
    if fields[0] != torch.cuda.current_device():
        raise TransportError("CUDA memory on another device than the evaluation's")
    torch.cuda._lazy_init()
    try:
        return torch.UntypedStorage._new_shared_cuda(*fields)
    except RuntimeError as exc:
        raise TransportError(f"CUDA memory that cannot be opened ({exc})") from None


def copy_into(target: torch.UntypedStorage, source: torch.UntypedStorage) -> None:
    """Copy ``source``'s bytes into ``target`` (same size), on the current stream."""
    if source.nbytes():
        _bytes_view(target).copy_(_bytes_view(source))


def copy_storage(storage: torch.UntypedStorage, device: torch.device | str | None = None) -> torch.UntypedStorage:
    """A copy of ``storage`` in this process's own memory (on ``device``, default the storage's)."""
    target = torch.empty(storage.nbytes(), dtype=torch.uint8, device=device or storage.device)
    if storage.nbytes():
        target.copy_(_bytes_view(storage))
    return target.untyped_storage()


def _bytes_view(storage: torch.UntypedStorage) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)


def _same(a: torch.UntypedStorage, b: torch.UntypedStorage) -> bool:
    return a.device == b.device and a.data_ptr() == b.data_ptr() and a.nbytes() == b.nbytes()


def _tensor(meta: Any, storages: Storages) -> torch.Tensor:
    try:
        storage = storages[int(meta["storage"])]
        size, stride, offset = [int(n) for n in meta["size"]], [int(n) for n in meta["stride"]], int(meta["offset"])
        dtype = _dtype(meta["dtype"])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise TransportError(f"a malformed tensor description ({exc})") from None
    if len(size) != len(stride) or min([offset, *size, *stride], default=0) < 0:
        raise TransportError("a tensor description with negative or mismatched sizes")
    itemsize = torch.empty(0, dtype=dtype).element_size()
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True)) if all(size) else offset - 1
    if (last + 1) * itemsize > storage.nbytes() and all(size):
        raise TransportError("a tensor description that reaches past its memory")
    return torch.empty(0, dtype=dtype, device=storage.device).set_(storage, offset, size, stride)


def _dtype(name: Any) -> torch.dtype:
    value = getattr(torch, name, None) if isinstance(name, str) and name.isidentifier() else None
    if not isinstance(value, torch.dtype):
        raise TransportError(f"an unknown dtype {name!r}")
    return value


def _namedtuple(where: Any, items: tuple[Any, ...]) -> Any:
    module, name = where if isinstance(where, list) and len(where) == 2 else ("", "")
    cls: Callable[..., Any] | None = getattr(importlib.import_module(module), name, None) if module else None
    return cls(*items) if callable(cls) else items


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TransportError("a malformed value description")
    return value


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)
