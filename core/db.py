"""The core's asyncio face of the DuckDB store.

DuckDB's API is synchronous, so every call runs off the event loop: writes on ONE dedicated thread (one
writer, no write-write conflicts, stack.md 5.1), reads on the default pool (the store opens a cursor per
call). ``Batcher`` groups concurrent writes into one transaction: a commit costs far more than a row, so
batching is what lets the core sustain hundreds of submissions per second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from storage.store import Store

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")


class Database:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="duckdb-writer")

    async def read(self, fn: Callable[..., R], *args: Any) -> R:
        return await asyncio.to_thread(fn, *args)

    async def write(self, fn: Callable[..., R], *args: Any) -> R:
        return await asyncio.get_running_loop().run_in_executor(self._writer, lambda: fn(*args))

    async def close(self) -> None:
        await self.write(self.store.close)
        self._writer.shutdown(wait=True)


class Batcher(Generic[T, R]):
    """Collects items from many coroutines and flushes them together, one result per item."""

    def __init__(self, flush: Callable[[list[T]], Awaitable[list[R]]], max_batch: int = 256) -> None:
        self._flush = flush
        self._max_batch = max_batch
        self._queue: asyncio.Queue[tuple[T, asyncio.Future[R]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="batcher")
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        await self._queue.put((item, future))
        return await future

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                results = await self._flush([item for item, _ in batch])
            except Exception as exc:  # every waiter learns of the failure; the loop goes on
                log.exception("batch write of %d items failed", len(batch))
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)

    async def close(self) -> None:
        if self._task:
            self._task.cancel()
