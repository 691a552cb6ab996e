"""Dataclass <-> JSON-compatible dict conversion, driven by type hints.

One small codec serves every typed structure that crosses a process boundary: the harness result
(over the private pipe and NATS) and the core's messages. Supported field types: dataclasses,
``Enum``, ``str``/``int``/``float``/``bool``, ``bytes`` (base64), ``list[T]``, ``tuple[T, ...]``,
``dict[str, T]``, ``T | None`` and ``Any`` (passed through unchanged).

It sits on every message's path, so the work that depends only on types (which fields a class has,
what a hint means) is done once per type and kept; per value only the checks the data needs remain.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
Decoder = Callable[[Any], Any]

# JSON's own scalars, by exact type: they encode as themselves (a StrEnum member is a str, but not exactly).
_PLAIN = frozenset({str, int, float, bool, type(None)})


class DecodeError(ValueError):
    """A payload does not match the structure it claims to be."""


def to_jsonable(value: Any) -> Any:
    """Turn a dataclass tree into plain JSON-compatible values."""
    cls: type = type(value)  # declared: mypy reads type() of Any as type[Any], which it takes for unhashable
    if cls in _PLAIN:
        return value
    return _encoder(cls)(value)


@functools.cache
def _encoder(cls: type) -> Callable[[Any], Any]:
    """How every value of ``cls`` is encoded; the checks run in this order, once per type."""
    if dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls))
        return lambda obj: {name: to_jsonable(getattr(obj, name)) for name in names}
    if issubclass(cls, enum.Enum):
        return lambda member: member.value
    if issubclass(cls, bytes):
        return lambda raw: base64.b64encode(raw).decode("ascii")
    if issubclass(cls, (list, tuple)):
        # Inline scalar test: long lists of floats (timing samples) skip a call per item.
        return lambda items: [v if type(v) in _PLAIN else to_jsonable(v) for v in items]
    if issubclass(cls, dict):
        return lambda mapping: {str(k): v if type(v) in _PLAIN else to_jsonable(v) for k, v in mapping.items()}
    return _same


def from_jsonable(cls: type[T], data: Any) -> T:
    """Rebuild an instance of ``cls`` from ``to_jsonable`` output; unknown keys are ignored."""
    try:
        return _decoder(cls)(data)
    except DecodeError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise DecodeError(f"cannot read {getattr(cls, '__name__', cls)}: {exc}") from exc


def _decoder(hint: Any) -> Decoder:
    # Only classes are cached (by identity). Other hints are rebuilt by their owner: typing compares unions
    # as sets (``int | str == str | int``) but decoding tries the first member only, so an equality-keyed
    # cache could hand one the other's decoder. Field hints are built once per dataclass anyway.
    return _class_decoder(hint) if isinstance(hint, type) else _build(hint)


@functools.cache
def _class_decoder(cls: type) -> Decoder:
    return _build(cls)


def _build(hint: Any) -> Decoder:
    """A function that reads values of ``hint``; typing's introspection runs here, not per value."""
    if hint is Any:
        return _same
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        # Only the first non-None member is tried: the wire format never needs more.
        optional = type(None) in args
        read = _decoder(next(a for a in args if a is not type(None)))
        return lambda data: None if data is None and optional else read(data)
    if origin in (list, tuple):
        (item, *_) = args or (Any,)
        read_list = _list_decoder(item)
        return read_list if origin is list else lambda data: tuple(read_list(data))
    if origin is dict:
        _, value_type = args or (str, Any)
        return _dict_decoder(value_type)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    if hint is bytes:
        return base64.b64decode
    if hint is float:
        return _read_float
    if isinstance(hint, type):
        return _type_check(hint)
    return _same


def _list_decoder(item: Any) -> Decoder:
    read = _decoder(item)
    # Items of exactly a scalar item type are read as they are, skipping a call each (timing samples).
    exact = item if item in _PLAIN else None

    def read_list(data: Any) -> list[Any]:
        if not isinstance(data, list):
            raise DecodeError(f"expected a list, got {type(data).__name__}")
        return [v if type(v) is exact else read(v) for v in data]

    return read_list


def _dict_decoder(value_type: Any) -> Decoder:
    read = _decoder(value_type)

    def read_dict(data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise DecodeError(f"expected an object, got {type(data).__name__}")
        return {k: read(v) for k, v in data.items()}

    return read_dict


def _dataclass_decoder(cls: type) -> Decoder:
    # Field decoders are built on first use, not here: a dataclass may contain itself (its decoder must
    # already be in the cache), and a hint that cannot be resolved fails only when such data arrives.
    fields: list[tuple[str, Decoder]] | None = None

    def read_dataclass(data: Any) -> Any:
        nonlocal fields
        if not isinstance(data, dict):
            raise DecodeError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
        if fields is None:
            hints = typing.get_type_hints(cls)
            fields = [(f.name, _decoder(hints[f.name])) for f in dataclasses.fields(cls) if f.init]
        return cls(**{name: read(data[name]) for name, read in fields if name in data})

    return read_dataclass


def _read_float(data: Any) -> float:
    # An int is accepted where a float is declared (JSON writes 2.0 as 2 in places); a bool is not.
    if isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if not isinstance(data, float):
        raise DecodeError(f"expected float, got {type(data).__name__}")
    return data


def _type_check(cls: type) -> Decoder:
    def read_instance(data: Any) -> Any:
        if not isinstance(data, cls):
            raise DecodeError(f"expected {cls.__name__}, got {type(data).__name__}")
        return data

    return read_instance


def _same(value: Any) -> Any:
    return value
