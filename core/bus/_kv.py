"""Key-value buckets on JetStream: JSON records by key, and the adapters' delivery ledger."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors
import nats.js.errors
from nats.js.kv import KeyValue

from core import subjects
from core.bus._errors import translated

log = logging.getLogger(__name__)

Opener = Callable[[], Awaitable[KeyValue]]


class _Bucket:
    """A KV bucket opened on first use, so a role that may not create it can start before the core does."""

    def __init__(self, open_: Opener) -> None:
        self._open = open_
        self._opened: KeyValue | None = None

    async def _kv(self) -> KeyValue:
        if self._opened is None:
            self._opened = await self._open()
        return self._opened


class JsonBucket(_Bucket):
    """A JetStream KV bucket holding JSON objects by key; keys go through ``subjects.token``."""

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored object, or ``None`` when there is none (or it cannot be read)."""
        kv = await self._kv()
        with translated(f"read {key}"):
            try:
                entry = await kv.get(subjects.token(key))
            except nats.js.errors.KeyNotFoundError:           # KeyDeletedError included
                return None
        try:
            value = json.loads(entry.value or b"")
        except ValueError:
            log.warning("ignoring an unreadable entry %s in a KV bucket", key)
            return None
        return value if isinstance(value, dict) else None

    async def put(self, key: str, value: dict[str, Any]) -> None:
        kv = await self._kv()
        with translated(f"store {key}"):
            await kv.put(subjects.token(key), json.dumps(value).encode())

    async def delete(self, key: str) -> None:
        kv = await self._kv()
        with translated(f"delete {key}"):
            await kv.delete(subjects.token(key))



class Ledger(_Bucket):
    """A small record of facts that must outlive a process (a JetStream key-value bucket with a TTL).

    Chat adapters keep their delivery bookkeeping here (replies already posted, the platform's id of a
    message to update, events already handled) so a restart neither loses nor doubles a message.
    Keys may hold any characters: each is stored under ``subjects.token(key)``.
    """

    async def get(self, key: str) -> bytes | None:
        kv = await self._kv()
        with translated("read the delivery ledger"):
            try:
                entry = await kv.get(subjects.token(key))
            except nats.js.errors.KeyNotFoundError:
                return None
        return entry.value

    async def put(self, key: str, value: bytes) -> None:
        kv = await self._kv()
        with translated("write the delivery ledger"):
            await kv.put(subjects.token(key), value)

    async def claim(self, key: str, value: bytes = b"1") -> bool:
        """Record ``key`` unless it is there already; ``True`` only for the first caller (atomic)."""
        kv = await self._kv()
        with translated("write the delivery ledger"):
            try:
                await kv.create(subjects.token(key), value)
            except nats.js.errors.KeyWrongLastSequenceError:
                return False
        return True

