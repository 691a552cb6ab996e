"""Data between the judge and the runner: a private socket, JSON records, tensor memory beside them.

The judge (``harness.judge.runner_link``) and the runner (``harness.runner.runner_process``) are two processes of
one evaluation.
A message is a record (``harness.channel`` framing) whose optional ``"blobs"`` field lists the sizes of raw
byte blocks that follow it on the socket. Values cross as a description (``pack``) plus their tensors'
memory, one entry per distinct storage, so tensors that share memory on one side share it on the other:

* CPU storages travel as bytes;
* CUDA storages travel as CUDA IPC handles of memory the **runner** allocated (``harness.cuda_ipc``):
  the judge maps the runner's memory and copies what it needs, and the runner never gets a handle to the
  judge's memory. Inputs are staged into runner-allocated buffers the same way (``harness.judge.runner_link``).

A value arrives as the checker would see it in one process: tuples, lists, dicts, Python scalars (complex
too), ``None``, torch's named results (``torch.return_types.*``) and the problem's own namedtuples as their
classes, tensors with their shape, strides, offset, dtype and conjugate/negative bits. The judge decodes
from fixed tables only (``DTYPES``, ``TORCH_TUPLES``, the problem's namedtuples): it never imports, never
unpickles and never looks an attribute up by a name the runner chose; anything else is a ``TransportError``.
Only the runner, whose process is the submission's anyway, imports a class the judge named.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import socket
import struct
from collections.abc import Sequence
from typing import Any

import torch

from harness.channel import MAX_RECORD_BYTES, encode

_BLOB = struct.Struct(">Q")
_HEADER = struct.Struct(">I")
_SCALARS = (int, float, bool, str, type(None))
MAX_DEPTH = 16
MEMORY_PROBE = b"kernelrank: the runner's memory"  # read by the judge to learn whether it may (runner_memory)
_TENSOR_KEYS = frozenset({"storage", "offset", "size", "stride", "dtype", "conj", "neg"})


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

    def send(self, record: dict[str, Any], blobs: Sequence[bytes | memoryview] | None = None) -> None:
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
            except (ValueError, RecursionError) as exc:  # deep nesting: refused, not the harness's failure
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


def _known_dtypes() -> dict[str, torch.dtype]:
    """Every dtype of the installed torch that a plain tensor can hold, by its own name (quantized ones need
    parameters a storage does not carry)."""
    found = {str(d).removeprefix("torch."): d for d in vars(torch).values() if isinstance(d, torch.dtype)}
    return {name: d for name, d in found.items() if not name.startswith(("qint", "quint"))}


def _torch_tuples() -> dict[tuple[str, str], type]:
    """torch's tuple classes that take their items as one sequence: its named results
    (``torch.return_types.geqrf``, ``sort``, ``linalg_qr``..., enumerated once) and ``torch.Size``."""
    results = [
        cls
        for cls in vars(torch.return_types).values()
        if isinstance(cls, type) and issubclass(cls, tuple) and cls.__module__ == "torch.return_types"
    ]
    classes: list[type] = [*results, torch.Size]
    return {(cls.__module__, cls.__qualname__): cls for cls in classes}


# The only names decoding ever resolves, taken from objects imported here: a runner's string is a key into these
# tables, never an attribute name or a module to import (issue 25: a lazy torch submodule once imported a
# module the runner had planted).
DTYPES = _known_dtypes()
TORCH_TUPLES = _torch_tuples()
_PROBLEM_TUPLES: dict[tuple[str, str], type] = {}  # namedtuples of the problem's own modules (the judge's side)


def allow_namedtuples(namespace: dict[str, Any]) -> None:
    """Let the problem's namedtuple classes found in ``namespace`` (the reference module's globals, which the
    judge imported from the problem's own files) come back as themselves."""
    for value in list(namespace.values()):
        if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields"):
            _PROBLEM_TUPLES[(value.__module__, value.__qualname__)] = value


def pack(value: Any, storages: Storages, depth: int = 0) -> Any:
    """A JSON description of ``value``; its tensors' storages are appended to ``storages`` (deduplicated)."""
    if isinstance(value, torch.Tensor):
        return {"tensor": _pack_tensor(value, storages)}
    if depth >= MAX_DEPTH:
        raise TransportError("a value nested too deeply to hand over")
    if isinstance(value, tuple) and type(value) is not tuple:
        kind = type(value)
        return {
            "namedtuple": [kind.__module__, kind.__qualname__],
            "items": [pack(item, storages, depth + 1) for item in value],
        }
    if isinstance(value, (tuple, list)):
        return {"tuple" if type(value) is tuple else "list": [pack(item, storages, depth + 1) for item in value]}
    if isinstance(value, dict):
        if not all(isinstance(key, (str, int)) for key in value):
            raise TransportError("a dict with keys other than strings and integers cannot be handed over")
        return {"dict": [[key, pack(item, storages, depth + 1)] for key, item in value.items()]}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    if isinstance(value, _SCALARS):
        return {"value": value}
    raise TransportError(f"a {type(value).__module__}.{type(value).__qualname__}, which cannot be handed over")


def unpack(meta: Any, storages: Storages, rebuild_classes: bool = False, depth: int = 0) -> Any:
    """The value ``pack`` described, over ``storages``. Named tuples come back as their class when it is one of
    torch's return types or the problem's (``allow_namedtuples``), else as plain tuples; with ``rebuild_classes``
    (the runner's side, whose process is the submission's anyway) any class the judge named is imported."""
    if not isinstance(meta, dict) or len(meta) not in (1, 2) or depth > MAX_DEPTH + 1:
        raise TransportError("a malformed value description")
    if "tensor" in meta:
        return _tensor(meta["tensor"], storages)
    if "namedtuple" in meta:
        items = tuple(unpack(item, storages, rebuild_classes, depth + 1) for item in _list(meta.get("items")))
        return _named(meta["namedtuple"], items, rebuild_classes)
    if "tuple" in meta or "list" in meta:
        listed = _list(meta.get("tuple", meta.get("list")))
        values = [unpack(item, storages, rebuild_classes, depth + 1) for item in listed]
        return tuple(values) if "tuple" in meta else values
    if "dict" in meta:
        pairs = _list(meta["dict"])
        if not all(isinstance(p, list) and len(p) == 2 and type(p[0]) in (str, int, bool) for p in pairs):
            raise TransportError("a malformed dict description")
        return {key: unpack(item, storages, rebuild_classes, depth + 1) for key, item in pairs}
    if "dtype" in meta:
        return _dtype(meta["dtype"])
    if "complex" in meta:
        parts = meta["complex"]
        if not (isinstance(parts, list) and len(parts) == 2 and all(type(p) in (int, float) for p in parts)):
            raise TransportError("a malformed complex number")
        return complex(*parts)
    if "value" in meta and type(meta["value"]) in _SCALARS:
        return meta["value"]
    raise TransportError("a value description of an unknown kind")


# ---- memory ------------------------------------------------------------------------------------------


def cpu_blobs(storages: Storages) -> list[memoryview]:
    """The bytes of CPU storages, without copying."""
    return [_bytes_view(s).numpy().data if s.nbytes() else memoryview(b"") for s in storages]


def cpu_storages(blobs: list[bytearray]) -> Storages:
    """Storages of this process holding ``blobs`` (the blobs' memory, no copy)."""
    return [torch.frombuffer(b, dtype=torch.uint8).untyped_storage() if b else torch.UntypedStorage(0) for b in blobs]


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


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TransportError("a malformed value description")
    return value


def _pack_tensor(value: torch.Tensor, storages: Storages) -> dict[str, Any]:
    if type(value) is not torch.Tensor and not isinstance(value, torch.nn.Parameter):
        raise TransportError(f"a {type(value).__module__}.{type(value).__qualname__}, a tensor subclass")
    name = str(value.dtype).removeprefix("torch.")
    if value.layout != torch.strided or value.is_nested or value.device.type not in ("cpu", "cuda"):
        raise TransportError(f"a {value.layout} tensor on {value.device.type}: only dense CPU and CUDA tensors cross")
    if name not in DTYPES:
        raise TransportError(f"a tensor of dtype {name}, which cannot be handed over")
    storage = value.untyped_storage()
    index = next((i for i, s in enumerate(storages) if _same(s, storage)), None)
    if index is None:
        index = len(storages)
        storages.append(storage)
    described = {
        "storage": index,
        "offset": value.storage_offset(),
        "size": list(value.shape),
        "stride": list(value.stride()),
        "dtype": name,
    }
    # lazy conjugation and negation are bits of the view, not of the memory: without them the values differ
    bits = {"conj": value.is_conj(), "neg": value.is_neg()}
    return {**described, **{bit: True for bit, on in bits.items() if on}}


def _tensor(meta: Any, storages: Storages) -> torch.Tensor:
    if not isinstance(meta, dict) or not set(meta) <= _TENSOR_KEYS:
        raise TransportError("a malformed tensor description")
    fields: list[Any] = [meta.get(key) for key in ("storage", "offset", "size", "stride")]  # checked next
    index, offset, size, stride = fields
    numbers = [index, offset, *_list(size), *_list(stride)]
    if not all(type(n) is int and n >= 0 for n in numbers) or len(size) != len(stride):
        raise TransportError("a tensor description with sizes that are not counts")
    if index >= len(storages):
        raise TransportError("a tensor description of memory that was not sent")
    storage, dtype = storages[index], _dtype(meta.get("dtype"))
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if all(size) and (last + 1) * dtype.itemsize > storage.nbytes():
        raise TransportError("a tensor description that reaches past its memory")
    try:
        tensor = torch.empty(0, dtype=dtype, device=storage.device).set_(storage, offset, size, stride)
    except RuntimeError as exc:
        raise TransportError(f"a tensor description torch refuses ({exc})") from None
    if meta.get("conj") is True and dtype.is_complex:
        tensor = tensor.conj()
    if meta.get("neg") is True:
        tensor = tensor._neg_view()
    return tensor


def _dtype(name: Any) -> torch.dtype:
    dtype = DTYPES.get(name) if isinstance(name, str) else None
    if dtype is None:
        raise TransportError(f"an unknown dtype {str(name)[:40]!r}")
    return dtype


def _named(where: Any, items: tuple[Any, ...], rebuild_classes: bool) -> Any:
    if not (isinstance(where, list) and len(where) == 2 and all(isinstance(w, str) for w in where)):
        raise TransportError("a malformed named tuple description")
    module, name = where
    cls = TORCH_TUPLES.get((module, name)) or _PROBLEM_TUPLES.get((module, name))
    if cls is None and rebuild_classes:
        cls = getattr(importlib.import_module(module), name, None)
    try:
        if cls is not None and TORCH_TUPLES.get((module, name)) is cls:
            return cls(items)  # a structseq (and torch.Size) takes its items as one sequence
        if isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields"):
            return cls(*items)
    except TypeError as exc:
        raise TransportError(f"a {name} with the wrong fields ({exc})") from None
    return items
