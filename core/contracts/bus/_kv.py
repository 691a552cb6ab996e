"""Key-value buckets on JetStream: JSON records by key, the adapters' delivery ledger, and opening them.

Only the core creates buckets (``ensure_streams``, with as many copies as its streams); every other role opens
what is there, on first use.
Reads and writes are repeated while NATS is unreachable, for up to ``PUBLISH_CONFIRM_S`` (a put is
idempotent): a delivery ledger whose write failed in a NATS restart would post its reply a second time.
``Ledger.claim`` is not repeated, since a claim whose answer was lost cannot tell itself from another's.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors
import nats.js.errors
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from core.contracts import subjects
from core.contracts.bus._errors import BusError, replicas_checked, translated
from core.contracts.bus._link import while_reconnecting
from core.contracts.bus._streams import DAY_S
from core.contracts.roles import CHAT_PLATFORMS

log = logging.getLogger(__name__)

# Modal keeps a call's output for 7 days: a call id older than that is of no use to a worker re-attaching. Each
# worker reads and writes only its own keys (``<worker>.<run>``); the bucket is bounded (a record is ~100 bytes).
RUNNER_CALLS_CONFIG = KeyValueConfig(
    bucket=subjects.RUNNER_CALLS,
    history=1,
    ttl=7 * DAY_S,
    storage=StorageType.FILE,
    max_bytes=64 << 20,
    max_value_size=16 << 10,
    direct=True,  # reads by subject, so a permission can pin each worker to its own keys
)
LEDGER_TTL_S = 8 * DAY_S  # longer than replies are kept (7 days), so a replayed reply is still known
LEDGER_MAX_BYTES = 256 << 20

Opener = Callable[[], Awaitable[KeyValue]]


class _Bucket:
    """A KV bucket opened on first use, so a role that may not create it can start before the core does."""

    def __init__(self, open_: Opener, prefix: str = "") -> None:
        self._open = open_
        self._opened: KeyValue | None = None
        self._prefix = prefix  # a key space of its own inside the bucket (one worker's), or none

    def _key(self, key: str) -> str:
        return f"{self._prefix}.{subjects.token(key)}" if self._prefix else subjects.token(key)

    async def _kv(self) -> KeyValue:
        if self._opened is None:
            self._opened = await self._open()
        return self._opened


class JsonBucket(_Bucket):
    """A JetStream KV bucket holding JSON objects by key; keys go through ``subjects.token``, under the bucket's
    prefix where it has one."""

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored object, or ``None`` when there is none (or it cannot be read)."""
        kv = await self._kv()
        entry = await while_reconnecting(f"read {key}", lambda: _get(kv, self._key(key)))
        if entry is None:
            return None
        try:
            value = json.loads(entry.value or b"")
        except ValueError:
            log.warning("ignoring an unreadable entry %s in a KV bucket", key)
            return None
        return value if isinstance(value, dict) else None

    async def put(self, key: str, value: dict[str, Any]) -> None:
        kv = await self._kv()
        await while_reconnecting(f"store {key}", lambda: kv.put(self._key(key), json.dumps(value).encode()))

    async def delete(self, key: str) -> None:
        kv = await self._kv()
        await while_reconnecting(f"delete {key}", lambda: kv.delete(self._key(key)))


class Ledger(_Bucket):
    """A small record of facts that must outlive a process (a JetStream key-value bucket with a TTL).

    Chat adapters keep their delivery bookkeeping here (replies already posted, the platform's id of a
    message to update, events already handled) so a restart neither loses nor doubles a message.
    Keys may hold any characters: each is stored under ``subjects.token(key)``.
    """

    async def get(self, key: str) -> bytes | None:
        kv = await self._kv()
        entry = await while_reconnecting("read the delivery ledger", lambda: _get(kv, self._key(key)))
        return None if entry is None else entry.value

    async def put(self, key: str, value: bytes) -> None:
        kv = await self._kv()
        await while_reconnecting("write the delivery ledger", lambda: kv.put(self._key(key), value))

    async def claim(self, key: str, value: bytes = b"1") -> bool:
        """Record ``key`` unless it is there already; ``True`` only for the first caller (atomic)."""
        kv = await self._kv()
        with translated("write the delivery ledger"):
            try:
                await kv.create(self._key(key), value)
            except nats.js.errors.KeyWrongLastSequenceError:
                return False
        return True


class BucketOps:
    """Mixed into ``Bus``: needs its ``_js`` and ``_manages`` (whether it may create buckets)."""

    _js: Any
    _manages: bool
    _replicas: int  # copies of each bucket the core creates (``ensure_streams``)
    worker_name: str

    async def runner_calls(self) -> JsonBucket:
        """The KV bucket where remote backends keep the call they started for each run (see core.contracts.subjects),
        in this worker's own key space: a restarted worker of the same name finds its calls, no other worker does."""
        return JsonBucket(
            lambda: self._open_bucket(self._copies(RUNNER_CALLS_CONFIG)), prefix=subjects.worker_token(self.worker_name)
        )

    async def ledger(self, bucket: str, ttl_s: float = LEDGER_TTL_S) -> Ledger:
        """The key-value bucket ``bucket`` (made by the core, or here where this bus may); entries expire after
        ``ttl_s``. It is opened on first use, so an adapter may start before the core."""
        return Ledger(lambda: self._open_bucket(self._copies(_ledger_config(bucket, ttl_s))))

    def _copies(self, config: KeyValueConfig) -> KeyValueConfig:
        return dataclasses.replace(config, replicas=self._replicas)

    async def _ensure_buckets(self) -> None:
        """Create the buckets other roles use but may not create: runner calls and each chat adapter's ledger."""
        ledgers = (_ledger_config(subjects.ledger_bucket(p.value)) for p in CHAT_PLATFORMS)
        for config in map(self._copies, (RUNNER_CALLS_CONFIG, *ledgers)):
            with replicas_checked(f"the {config.bucket} bucket", self._replicas):
                try:
                    await self._js.create_key_value(config)
                except nats.js.errors.BadRequestError as exc:  # made by another version: its entries still serve
                    log.warning("keeping the existing %s bucket (%s)", config.bucket, exc.description or exc)
                    await self._bound(config)

    async def _bound(self, config: KeyValueConfig) -> None:
        """Give a bucket made before its byte limits and direct reads existed those, and the replica count asked
        for now (its stream, updated in place)."""
        stream = (await self._js.stream_info(f"KV_{config.bucket}")).config
        wanted = (
            config.max_bytes or -1,
            config.max_value_size or -1,
            bool(config.direct) or bool(stream.allow_direct),
            config.replicas,
        )
        if (stream.max_bytes, stream.max_msg_size, bool(stream.allow_direct), stream.num_replicas) != wanted:
            stream.max_bytes, stream.max_msg_size, stream.allow_direct, stream.num_replicas = wanted
            await self._js.update_stream(stream)

    async def _open_bucket(self, config: KeyValueConfig) -> KeyValue:
        """An existing bucket as it is; a missing one is created where this bus may manage the streams."""
        with translated(f"open the bucket {config.bucket}"):
            try:
                return await self._js.key_value(config.bucket)
            except nats.js.errors.BucketNotFoundError as exc:
                if not self._manages:
                    raise BusError(
                        f"the {config.bucket} bucket does not exist yet (the core creates it when it starts)."
                    ) from exc
            return await self._js.create_key_value(config)


def _ledger_config(bucket: str, ttl_s: float = LEDGER_TTL_S) -> KeyValueConfig:
    return KeyValueConfig(bucket=bucket, ttl=ttl_s, history=1, storage=StorageType.FILE, max_bytes=LEDGER_MAX_BYTES)


async def _get(kv: KeyValue, stored_key: str) -> KeyValue.Entry | None:
    try:
        return await kv.get(stored_key)
    except nats.js.errors.KeyNotFoundError:  # KeyDeletedError included
        return None
