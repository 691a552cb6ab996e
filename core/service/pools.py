"""What the workers say about their GPU pools, and what the core knows is queued: the ``queue`` command's facts.

Workers publish a ``PoolStatus`` on ``pools.status.<gpu>`` every few seconds. ``PoolBoard`` keeps the latest
report of each worker and forgets a worker that has been silent for ``stale_after_s`` (it stopped or lost its
connection), so a summary only counts workers that are alive. Receive times come from this process's
monotonic clock, not the report's ``at``: a worker whose clock is off must not look dead or immortal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from core.contracts.messages import PoolStatus

STALE_AFTER_S = 60.0  # a worker silent this long is no longer counted


@dataclass(frozen=True)
class PoolSummary:
    """The live workers of one GPU pool, added up."""

    gpu: str
    workers: int
    running: int  # jobs the workers are running now
    capacity: int  # jobs they may run at once
    backlog: int  # jobs taken from the queue that wait inside a backend (Modal's own queue)
    backends: tuple[str, ...]


class PoolBoard:
    """The latest ``PoolStatus`` per (pool, worker); ``record`` is the subscription's callback."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, stale_after_s: float = STALE_AFTER_S) -> None:
        self._clock = clock
        self.stale_after_s = stale_after_s
        self._latest: dict[tuple[str, str], tuple[float, PoolStatus]] = {}

    async def record(self, status: PoolStatus) -> None:
        self._latest[(status.gpu, status.worker)] = (self._clock(), status)

    def summary(self) -> dict[str, PoolSummary]:
        """One summary per pool that has at least one live worker."""
        now = self._clock()
        for key in [k for k, (seen, _) in self._latest.items() if now - seen > self.stale_after_s]:
            del self._latest[key]
        pools: dict[str, list[PoolStatus]] = {}
        for _, status in self._latest.values():
            pools.setdefault(status.gpu, []).append(status)
        return {
            gpu: PoolSummary(
                gpu=gpu,
                workers=len(reports),
                running=sum(r.running for r in reports),
                capacity=sum(r.capacity for r in reports),
                backlog=sum(r.backlog for r in reports),
                backends=tuple(sorted({r.backend for r in reports})),
            )
            for gpu, reports in sorted(pools.items())
        }
