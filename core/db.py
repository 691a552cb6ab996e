"""The core's asyncio face of the DuckDB store.

DuckDB's API is synchronous, so every call runs off the event loop: writes on ONE dedicated thread (one
writer, no write-write conflicts, stack.md 5.1), reads on the default pool (the store opens a cursor per
call). ``Writer`` groups every pending write into one transaction: on this class of machine a DuckDB
statement or commit costs milliseconds, so batching is what lets the core sustain hundreds of
submissions per second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from storage.errors import StoreFull
from storage.records import NewSubmission, ResultRecord, Submission, WriteBatch
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


class Writer:
    """The core's one writer: writes from many coroutines are committed together, one transaction per round.

    While a round is being committed, new writes queue up; the next round takes all of them. So under load
    batches grow by themselves, and a lone write waits for at most one round.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._submissions: list[tuple[NewSubmission, asyncio.Future[Submission]]] = []
        self._running: list[tuple[list[tuple[str, str]], asyncio.Future[None]]] = []
        self._results: list[tuple[list[ResultRecord], asyncio.Future[list[bool]]]] = []
        self._replied: list[str] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def submission(self, item: NewSubmission) -> Submission:
        future: asyncio.Future[Submission] = self._future()
        self._submissions.append((item, future))
        return await self._queued(future)

    async def running(self, items: list[tuple[str, str]]) -> None:
        """Mark (run_id, worker) runs running, durably: a run a worker took is never mistaken for a queued one."""
        future: asyncio.Future[None] = self._future()
        self._running.append((items, future))
        await self._queued(future)

    def replied(self, run_ids: list[str]) -> None:
        """Note replies sent, without starting a round: the notes ride along with the next write (or the last
        one, at close). A note lost in a crash costs at most a repeated reply, which the reply's id dedupes."""
        self._replied += run_ids

    async def results(self, items: list[ResultRecord]) -> list[bool]:
        future: asyncio.Future[list[bool]] = self._future()
        self._results.append((items, future))
        return await self._queued(future)

    def _future(self) -> asyncio.Future:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="duckdb-writer")
        return asyncio.get_running_loop().create_future()

    async def _queued(self, future: asyncio.Future[T]) -> T:
        self._wake.set()
        return await future

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            submissions, self._submissions = self._submissions, []
            running, self._running = self._running, []
            results, self._results = self._results, []
            replied, self._replied = self._replied, []
            batch = WriteBatch(submissions=[item for item, _ in submissions],
                               running=[mark for marks, _ in running for mark in marks],
                               results=[record for records, _ in results for record in records], replied=replied)
            waiters = [f for _, f in submissions] + [f for _, f in running] + [f for _, f in results]
            try:
                outcome = await self._db.write(self._db.store.write, batch)
            except Exception as exc:  # every waiter learns of the failure; the writer goes on
                self._replied[:0] = replied
                log.error("a write of %d submissions and %d results failed: %s", len(submissions), len(batch.results),
                          exc, exc_info=not isinstance(exc, StoreFull))
                for future in waiters:
                    _settle(future, exception=exc)
                continue
            for (_, future), submission in zip(submissions, outcome.submissions, strict=True):
                _settle(future, submission)
            for _, future in running:
                _settle(future, None)
            offset = 0
            for records, future in results:
                _settle(future, outcome.stored[offset:offset + len(records)])
                offset += len(records)

    async def close(self) -> None:
        """Write the notes still waiting for a round, then stop."""
        if self._replied:
            try:
                await self._db.write(self._db.store.write, WriteBatch(replied=self._replied))
            except Exception:
                log.exception("could not note %d replies as sent", len(self._replied))
        if self._task:
            self._task.cancel()


def _settle(future: asyncio.Future[Any], value: Any = None, *, exception: BaseException | None = None) -> None:
    """Hand a round's outcome to its waiter, unless the waiter gave up (was cancelled) meanwhile."""
    if future.done():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(value)
