"""The core's asyncio face of the DuckDB store.

DuckDB's API is synchronous, so every call runs off the event loop: writes on two dedicated threads, one
per lane of the store (*intake*: new submissions, people, leaderboards; *outcomes*: what happens to runs),
reads on two threads of their own (the store opens a cursor per call), except queries' reads, which have a thread,
a bound and a deadline of their own (``Database.read``). ``Writer`` groups the pending writes of
each lane into one transaction: on this class of machine a DuckDB statement or commit costs milliseconds,
so batching is what lets the core sustain hundreds of submissions per second, and the two lanes keep a new
submission from waiting behind a batch of results.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from core.contracts import answer_by
from core.contracts.errors import Busy
from storage.errors import StoreFull
from storage.records import NewSubmission, Recorded, ResultRecord, Submission, WriteBatch
from storage.store import Store

log = logging.getLogger(__name__)
READ_THREADS = 2
QUERY_THREADS = 1  # DuckDB runs each statement on one thread (threads=1): the other core stays for submissions
MAX_QUERY_READS = 32  # queries' reads running or waiting; beyond, a query is refused at once rather than queued
BUSY_RETRY_S = 2
QUERY_NICENESS = 10  # added to the query thread's nice value
# A round of the outcomes lane costs milliseconds of CPU whatever it carries (docs/benchmarks.md, issue 31): it
# waits this long for the running marks and results that follow the first, which no one's acceptance waits on.
OUTCOMES_GATHER_S = 0.1
T = TypeVar("T")
R = TypeVar("R")


class Database:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._intake = ThreadPoolExecutor(max_workers=1, thread_name_prefix="duckdb-intake")
        self._outcomes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="duckdb-outcomes")
        self._queries = ThreadPoolExecutor(
            max_workers=QUERY_THREADS, thread_name_prefix="duckdb-queries", initializer=_yield_to_submissions
        )
        self._queries_in_flight = 0
        # Other reads (a submission's, the result path's) are short: two threads serve them. Each thread that runs
        # DuckDB keeps memory of its own (about 20 MiB a thread after a long person page), so fewer is leaner.
        self._reads = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="duckdb-reads")

    async def read(self, fn: Callable[..., R], *args: Any) -> R:
        """Run a read. A query's reads (a command with a deadline, ``answer_by``) go on threads of their own, so a
        crowd of readers never delays a submission's reads; past ``MAX_QUERY_READS`` waiting, a query is refused
        at once (``Busy``), and a read whose asker gave up before it began is dropped (``Abandoned``)."""
        due = answer_by.ANSWER_BY.get()
        if due is None:
            return await asyncio.get_running_loop().run_in_executor(self._reads, lambda: fn(*args))
        answer_by.check(due)
        if self._queries_in_flight >= MAX_QUERY_READS:
            raise Busy(
                "kernelrank is answering many requests just now and would not reach this one in time; "
                f"try again in {BUSY_RETRY_S} seconds.",
                BUSY_RETRY_S,
            )

        def in_time() -> R:
            answer_by.check(due)  # still wanted now that a thread is free?
            return fn(*args)

        self._queries_in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._queries, in_time)
        finally:
            self._queries_in_flight -= 1

    async def write(self, fn: Callable[..., R], *args: Any) -> R:
        """Run a write of the intake lane (submissions, people, leaderboards)."""
        return await asyncio.get_running_loop().run_in_executor(self._intake, lambda: fn(*args))

    async def write_outcomes(self, batch: WriteBatch) -> Recorded:
        """Run a round of the outcomes lane (running marks, results, replied marks)."""
        return await asyncio.get_running_loop().run_in_executor(self._outcomes, self.store.write, batch)

    async def close(self) -> None:
        await self.write(self.store.close)
        self._intake.shutdown(wait=True)
        self._outcomes.shutdown(wait=True)
        self._queries.shutdown(wait=True)
        self._reads.shutdown(wait=True)


class Writer:
    """The core's writer: writes from many coroutines are committed together, one transaction per lane and round.

    While a round is being committed, new writes of its lane queue up; the next round takes all of them. So
    under load batches grow by themselves, and a lone write waits for at most one round of its own lane.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._submissions: list[tuple[NewSubmission, asyncio.Future[Submission]]] = []
        self._running: list[tuple[list[tuple[str, str]], asyncio.Future[None]]] = []
        self._results: list[tuple[list[ResultRecord], asyncio.Future[Recorded]]] = []
        self._replied: list[str] = []
        self._intake = _Lane(self._intake_round, "duckdb-intake")
        self._outcomes = _Lane(self._outcomes_round, "duckdb-outcomes", gather_s=OUTCOMES_GATHER_S)

    async def submission(self, item: NewSubmission) -> Submission:
        future: asyncio.Future[Submission] = asyncio.get_running_loop().create_future()
        self._submissions.append((item, future))
        return await self._intake.wait_for(future)

    async def running(self, items: list[tuple[str, str]]) -> None:
        """Mark (run_id, worker) runs running, durably: a run a worker took is never mistaken for a queued one."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._running.append((items, future))
        await self._outcomes.wait_for(future)

    def replied(self, run_ids: list[str]) -> None:
        """Note replies sent, without starting a round: the notes ride along with the next write (or the last
        one, at close). A note lost in a crash costs at most a repeated reply, which the reply's id dedupes."""
        self._replied += run_ids

    async def results(self, items: list[ResultRecord]) -> Recorded:
        """Store results: whether each was stored by this call, and the entries they count on as they were before
        (``Store.write``)."""
        future: asyncio.Future[Recorded] = asyncio.get_running_loop().create_future()
        self._results.append((items, future))
        return await self._outcomes.wait_for(future)

    async def _intake_round(self) -> None:
        submissions, self._submissions = self._submissions, []
        try:
            stored = await self._db.write(self._db.store.add_submissions, [item for item, _ in submissions])
        except Exception as exc:  # every waiter learns of the failure; the writer goes on
            log.error(
                "a write of %d submissions failed: %s", len(submissions), exc, exc_info=not isinstance(exc, StoreFull)
            )
            for _, future in submissions:
                _settle(future, exception=exc)
            return
        for (_, future), submission in zip(submissions, stored, strict=True):
            _settle(future, submission)

    async def _outcomes_round(self) -> None:
        running, self._running = self._running, []
        results, self._results = self._results, []
        replied, self._replied = self._replied, []
        batch = WriteBatch(
            running=[mark for marks, _ in running for mark in marks],
            results=[record for records, _ in results for record in records],
            replied=replied,
        )
        try:
            recorded = await self._db.write_outcomes(batch)
        except Exception as exc:
            self._replied[:0] = replied
            log.error(
                "a write of %d running marks and %d results failed: %s",
                len(batch.running),
                len(batch.results),
                exc,
                exc_info=not isinstance(exc, StoreFull),
            )
            waiters: list[asyncio.Future[Any]] = [f for _, f in running] + [f for _, f in results]
            for future in waiters:
                _settle(future, exception=exc)
            return
        for _, future in running:
            _settle(future, None)
        offset = 0
        for records, future in results:
            _settle(future, Recorded(recorded.stored[offset : offset + len(records)], recorded.previous))
            offset += len(records)

    async def close(self) -> None:
        """Write the notes still waiting for a round, then stop."""
        if self._replied:
            try:
                await self._db.write_outcomes(WriteBatch(replied=self._replied))
            except Exception:
                log.exception("could not note %d replies as sent", len(self._replied))
        self._intake.stop()
        self._outcomes.stop()


class _Lane:
    """One task that runs ``round`` whenever writes are waiting, one round at a time; with ``gather_s``, a round
    starts that long after the write that woke it, so the writes that follow it share its round."""

    def __init__(self, round_: Callable[[], Any], name: str, gather_s: float = 0.0) -> None:
        self._round, self._name, self._gather_s = round_, name, gather_s
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def wait_for(self, future: asyncio.Future[T]) -> T:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=self._name)
        self._wake.set()
        return await future

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            if self._gather_s:
                await asyncio.sleep(self._gather_s)
            self._wake.clear()
            await self._round()

    def stop(self) -> None:
        if self._task:
            self._task.cancel()


def _yield_to_submissions() -> None:
    """Lower this query thread's CPU priority (Linux schedules threads one by one): on a busy host a crowd of
    readers then takes what submissions leave, instead of half of it."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), QUERY_NICENESS)


def _settle(future: asyncio.Future[Any], value: Any = None, *, exception: BaseException | None = None) -> None:
    """Hand a round's outcome to its waiter, unless the waiter gave up (was cancelled) meanwhile."""
    if future.done():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(value)
