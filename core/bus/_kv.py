"""Key-value buckets on JetStream: JSON records by key, and the adapters' delivery ledger.

Reads and writes are repeated while NATS is unreachable, for up to ``PUBLISH_CONFIRM_S`` (a put is
idempotent): a delivery ledger whose write failed in a NATS restart would post its reply a second time.
``Ledger.claim`` is not repeated, since a claim whose answer was lost cannot tell itself from another's.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import nats.errors
import nats.js.errors
from nats.js.kv import KeyValue

from core import subjects
from core.bus._errors import translated
from core.bus._link import while_reconnecting

log = logging.getLogger(__name__)

class JsonBucket:
    """A JetStream KV bucket holding JSON objects by key; keys go through ``subjects.token``."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored object, or ``None`` when there is none (or it cannot be read)."""
        entry = await while_reconnecting(f"read {key}", lambda: _get(self._kv, key))
        if entry is None:
            return None
        try:
            value = json.loads(entry.value or b"")
        except ValueError:
            log.warning("ignoring an unreadable entry %s in a KV bucket", key)
            return None
        return value if isinstance(value, dict) else None

    async def put(self, key: str, value: dict[str, Any]) -> None:
        await while_reconnecting(f"store {key}", lambda: self._kv.put(subjects.token(key), json.dumps(value).encode()))

    async def delete(self, key: str) -> None:
        await while_reconnecting(f"delete {key}", lambda: self._kv.delete(subjects.token(key)))



class Ledger:
    """A small record of facts that must outlive a process (a JetStream key-value bucket with a TTL).

    Chat adapters keep their delivery bookkeeping here (replies already posted, the platform's id of a
    message to update, events already handled) so a restart neither loses nor doubles a message.
    Keys may hold any characters: each is stored under ``subjects.token(key)``.
    """

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, key: str) -> bytes | None:
        entry = await while_reconnecting("read the delivery ledger", lambda: _get(self._kv, key))
        return None if entry is None else entry.value

    async def put(self, key: str, value: bytes) -> None:
        await while_reconnecting("write the delivery ledger", lambda: self._kv.put(subjects.token(key), value))

    async def claim(self, key: str, value: bytes = b"1") -> bool:
        """Record ``key`` unless it is there already; ``True`` only for the first caller (atomic)."""
        with translated("write the delivery ledger"):
            try:
                await self._kv.create(subjects.token(key), value)
            except nats.js.errors.KeyWrongLastSequenceError:
                return False
        return True


async def _get(kv: KeyValue, key: str) -> KeyValue.Entry | None:
    try:
        return await kv.get(subjects.token(key))
    except nats.js.errors.KeyNotFoundError:           # KeyDeletedError included
        return None
