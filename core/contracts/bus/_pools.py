"""Pool status: each worker's periodic word on its GPU pool, on plain NATS (no stream: only the latest matters).

A worker publishes on ``pools.status.<worker>.<gpu>``, which NATS lets only that worker's user publish, and only
for its own pools (``core.contracts.roles.worker_permissions``); the watcher drops a report whose body names
another worker or pool than its subject.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from nats.aio.msg import Msg

from core.contracts import subjects
from core.contracts.bus._consumers import Running, Served
from core.contracts.bus._errors import translated
from core.contracts.bus._streams import names_publisher
from core.contracts.messages import DecodeError, PoolStatus, decode, encode

log = logging.getLogger(__name__)


class PoolStatusOps:
    """Mixed into ``Bus``: needs its ``_nc`` and ``_running``."""

    _nc: Any
    _running: set[Running]

    async def publish_pool_status(self, status: PoolStatus) -> None:
        """A worker's periodic report, on its worker's and pool's subject."""
        subject = subjects.pool_status_subject(status.worker, status.gpu)
        with translated(f"publish on {subject}"):
            await self._nc.publish(subject, encode(status))

    async def watch_pool_status(self, on_status: Callable[[PoolStatus], Awaitable[None]]) -> Running:
        """Call ``on_status`` with every worker's ``PoolStatus`` report, of every pool, that its subject backs."""
        served = Served(self._running)

        async def on_message(msg: Msg) -> None:
            try:
                status = decode(PoolStatus, msg.data)
                if not _backed(msg.subject, status):
                    log.warning("dropped a pool status on %s naming %r, %r", msg.subject, status.worker, status.gpu)
                    return
                await on_status(status)
            except DecodeError as exc:
                log.warning("skipping an unreadable pool status on %s: %s", msg.subject, exc)
            except Exception:
                log.exception("could not handle a pool status on %s", msg.subject)

        with translated("watch pool status reports"):
            served.sub = await self._nc.subscribe(subjects.POOL_STATUS_ALL, cb=on_message)
            await self._nc.flush()
        return served


def _backed(subject: str, status: PoolStatus) -> bool:
    """Whether the report names the worker and pool its subject does."""
    return names_publisher(subject, status) and subjects.pool_of(subject) == subjects.token(status.gpu)
