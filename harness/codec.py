"""Dataclass <-> JSON-compatible dict conversion, driven by type hints.

One small codec serves every typed structure that crosses a process boundary: the harness result
(over the private pipe and NATS) and the core's messages. Supported field types: dataclasses,
``Enum``, ``str``/``int``/``float``/``bool``, ``bytes`` (base64), ``list[T]``, ``tuple[T, ...]``,
``dict[str, T]``, ``T | None`` and ``Any`` (passed through unchanged).
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class DecodeError(ValueError):
    """A payload does not match the structure it claims to be."""


def to_jsonable(value: Any) -> Any:
    """Turn a dataclass tree into plain JSON-compatible values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def from_jsonable(cls: type[T], data: Any) -> T:
    """Rebuild an instance of ``cls`` from ``to_jsonable`` output; unknown keys are ignored."""
    try:
        return _decode(cls, data)
    except DecodeError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise DecodeError(f"cannot read {getattr(cls, '__name__', cls)}: {exc}") from exc


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(tp: Any, data: Any) -> Any:
    if tp is Any:
        return data
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            return _decode(arg, data)
    if origin in (list, tuple):
        (item, *_) = typing.get_args(tp) or (Any,)
        if not isinstance(data, list):
            raise DecodeError(f"expected a list, got {type(data).__name__}")
        items = [_decode(item, v) for v in data]
        return items if origin is list else tuple(items)
    if origin is dict:
        _, value_type = typing.get_args(tp) or (str, Any)
        if not isinstance(data, dict):
            raise DecodeError(f"expected an object, got {type(data).__name__}")
        return {k: _decode(value_type, v) for k, v in data.items()}
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise DecodeError(f"expected an object for {tp.__name__}, got {type(data).__name__}")
        hints = _hints(tp)
        kwargs = {f.name: _decode(hints[f.name], data[f.name])
                  for f in dataclasses.fields(tp) if f.init and f.name in data}
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(data)
    if tp is bytes:
        return base64.b64decode(data)
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if isinstance(tp, type) and not isinstance(data, tp):
        raise DecodeError(f"expected {tp.__name__}, got {type(data).__name__}")
    return data
