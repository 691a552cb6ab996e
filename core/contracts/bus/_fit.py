"""Fitting a message under the bus's payload limit by cutting its longest texts (never ids, numbers or bytes).

A result or reply can carry whatever a kernel printed or raised: a 5 MB exception message does not fit in
NATS's 1 MB payload, and a publish that fails for size fails the same way every time. So the publisher
cuts instead: the longest text (by encoded size) keeps its head and tail, with a note of what was cut in
between, until the message fits; if texts alone cannot make it fit (a huge list of small items), the
longest list keeps its first half. Which field is long does not matter, so fields added later are covered.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Iterator
from typing import Any, TypeVar

from core.contracts.messages import encode

log = logging.getLogger(__name__)
M = TypeVar("M")

MIN_KEPT_CHARS = 256  # a cut text keeps this much of its head and tail together, at least
SLACK_BYTES = 256  # cut a little more than the excess: the note itself takes room


class TooLarge(ValueError):
    """Even cut down, the message would not fit."""


def encoded_size(value: Any) -> int:
    """Bytes of ``value`` on the wire."""
    return len(encode(value))


def fitted(message: Any, max_bytes: int) -> bytes:
    """The wire form of ``message``, cut down (``fit``) if it is longer than ``max_bytes``."""
    payload = encode(message)
    return payload if len(payload) <= max_bytes else encode(fit(message, max_bytes, size=len(payload)))


def fit(message: M, max_bytes: int, *, size: int | None = None) -> M:
    """``message`` itself when it encodes to at most ``max_bytes``, else a copy with its longest texts cut."""
    size = encoded_size(message) if size is None else size
    if size <= max_bytes:
        return message
    work = copy.deepcopy(message)
    while (excess := encoded_size(work) - max_bytes) > 0:
        if not (_cut_longest_text(work, excess) or _halve_longest_list(work)):
            raise TooLarge(f"a {type(message).__name__} stays {excess} bytes over the {max_bytes}-byte limit")
    log.warning("a %s of %d bytes was cut to fit the bus's %d-byte limit", type(message).__name__, size, max_bytes)
    return work


def _cut_longest_text(root: Any, excess: int) -> bool:
    sized = [
        (encoded_size(text), holder, key, text)
        for holder, key, text in _values(root, str)
        if len(text) > 2 * MIN_KEPT_CHARS
    ]
    if not sized:
        return False
    size, holder, key, text = max(sized, key=lambda found: found[0])
    keep = max(MIN_KEPT_CHARS, len(text) - int((excess + SLACK_BYTES) * len(text) / size) - 1)
    head, tail = keep - keep // 2, keep // 2
    _set(
        holder,
        key,
        f"{text[:head]}\n[... {len(text) - keep:,} characters cut to fit the message limit ...]\n"
        f"{text[len(text) - tail :]}",
    )
    return True


def _halve_longest_list(root: Any) -> bool:
    sized = [(encoded_size(items), holder, key, items) for holder, key, items in _values(root, list) if len(items) > 1]
    if not sized:
        return False
    _, holder, key, items = max(sized, key=lambda found: found[0])
    _set(holder, key, items[: len(items) // 2])
    return True


def _values(node: Any, kind: type) -> Iterator[tuple[Any, Any, Any]]:
    """(holder, key, value) for every value of ``kind`` under ``node``: dataclass fields, dict values, list items."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        items: Any = ((f.name, getattr(node, f.name)) for f in dataclasses.fields(node))
    elif isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return
    for key, value in list(items):
        if type(value) is kind:  # exactly: enum members (a StrEnum is a str) are not texts to cut
            yield node, key, value
        yield from _values(value, kind)


def _set(holder: Any, key: Any, value: Any) -> None:
    if isinstance(holder, dict | list):
        holder[key] = value
    else:
        object.__setattr__(holder, key, value)  # the copy is ours, frozen or not
