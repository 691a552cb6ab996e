"""The core service: answers commands, queues runs, stores results and replies to the chat they came from.

It is the only process that opens the database. Results arrive through a durable consumer and are
written in batches, idempotently by run id, before they are acknowledged. Each run is answered once: only
a result stored for the first time, or one whose reply was never noted as sent (a crash between storing
and replying), produces a reply, and that reply's id (``result-<run_id>``) dedupes a repeat within the
stream's window. In chat, a result's details go to its author alone (``core.service.verdicts``). A worker's
first progress event marks its run running in the database before it is acknowledged.

Start-up order matters after an outage: the consumers of results and progress start first, then
``_recover`` re-queues only runs that JetStream shows were never queued (no job in JOBS, waiting or in
flight, and no result in EVENTS), and only then are commands served. So results that piled up while the
core was away are read, never re-run, however long the outage (the queue's duplicate window is 2 minutes).

Workers get jobs from the core alone (``core.service.dispatch``), one delivery to one worker, with that attempt's
result key (``core.contracts.signing``); a result or progress event that is not signed with it (bound to its
worker's own key), that comes from an older delivery of the run than one already handed out, or a result from
another worker than the one holding the run, is dropped and logged (``core.service.worker_reports``), so a forged,
stale or stolen report never takes the place of the real one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from datetime import UTC, datetime
from typing import Any

from core.contracts import reply_parts
from core.contracts.answer_by import Abandoned
from core.contracts.bus import Bus
from core.contracts.messages import Command, Reply, ReplyTo, RunJob, RunProgress, RunResult
from core.service import admin_news, reference_timing, rounds, validation
from core.service.announce import TOP, announcement_targets, announcements
from core.service.args import time_left
from core.service.deadletter import DeadLetters
from core.service.deadlines import adopt_deadlines
from core.service.deps import Deps
from core.service.dispatch import Dispatcher
from core.service.handlers import dispatch
from core.service.jobs import JobQueue, run_job
from core.service.leaderboards import load_new_problems
from core.service.queue_news import queue_news
from core.service.runs import NEWS_EVERY_S
from core.service.scheduler import Scheduler
from core.service.verdicts import result_replies
from core.service.worker_reports import IssuedPools, Registry, ReportCheck
from harness.codec import from_jsonable
from harness.result import EvalResult, Failure, FailureKind, Mode, Status
from storage.errors import StoreFull
from storage.records import PreviousBest, RankRow, ResultRecord, RunInfo

log = logging.getLogger(__name__)


class CoreService:
    """Built by ``core.service.bootstrap.bootstrap``; shares its ``Deps`` (and so its ``RunBook``) with the handlers."""

    def __init__(self, bus: Bus, deps: Deps, jobs: JobQueue, pools: list[str]) -> None:
        self.bus, self.deps, self.jobs, self.pools = bus, deps, jobs, pools
        self.db, self.settings, self.writer, self.runs = deps.db, deps.settings, deps.writer, deps.runs
        self._announce_to = announcement_targets(self.settings.announce)
        announcement_targets(self.settings.admin_channels, admin_news.SETTING)  # a wrong entry stops the start
        registry = Registry(self.settings.secrets_dir)
        self.checks = ReportCheck(jobs.secret, self.runs, bus, worker_keys=bus.authenticated, registry=registry)
        self._pool_status = IssuedPools(registry, deps.pools.record, enforce=bus.authenticated)
        self._stoppers: list = []

    async def start(self) -> None:
        await self.bus.ensure_streams(
            self.pools,
            ack_wait_s=self.settings.ack_wait_s,
            max_deliver=self.settings.max_deliver,
            concurrency=self.settings.pool_concurrency,
            events_max_bytes=self.settings.events_max_bytes,
            replicas=self.settings.nats_replicas,
        )
        await self.db.write(load_new_problems, self.db.store, self.settings.problems_dir, self.pools)
        if adopted := await adopt_deadlines(self.deps):
            log.info("deadlines of %s are crowned by challenges of their own now", ", ".join(adopted))
        for run in await self.db.read(self.db.store.unfinished_runs):
            self.runs.waiting_for(run)  # so results find their run, and "jobs ahead" counts them
        dead = DeadLetters(self.bus, self._on_dead)
        await dead.start()
        self._stoppers = [
            dead.stop,
            (await self.bus.consume_results(self._on_results, ack_sync=False)).stop,
            (await self.bus.consume_progress(self._on_progress, ack_sync=False)).stop,
            (await self.bus.watch_pool_status(self._pool_status.record)).stop,
        ]
        await self._recover()
        await reference_timing.time_every_board(self.deps)
        dispatcher = Dispatcher(self.bus, self.jobs.secret, self.runs, self.checks)
        self._stoppers.append((await dispatcher.start(self.pools)).stop)
        self._stoppers.append((await self.bus.serve_commands(self.handle_command)).stop)
        self._stoppers.append(self._start("scheduler", Scheduler(self.deps, self.bus.publish_reply).run))
        self._stoppers.append(self._start("held-queue-news", self._tell_held_news))
        log.info("core ready: pools %s, database %s", ", ".join(self.pools), self.settings.database)

    def _start(
        self, name: str, run: Callable[[asyncio.Event], Coroutine[Any, Any, None]]
    ) -> Callable[[], Awaitable[None]]:
        """Run ``run(stop)`` as a task; returns what sets ``stop`` and waits for the task to end."""
        stop = asyncio.Event()
        task = asyncio.create_task(run(stop), name=name)

        async def stopped() -> None:
            stop.set()
            await task

        return stopped

    async def _tell_held_news(self, stop: asyncio.Event) -> None:
        """Tell waiting runs the news held back from them (``RunBook.news_due``), once it may be told."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), NEWS_EVERY_S)
            if stop.is_set():
                return
            try:
                await self._publish_all(queue_news(self.runs, self.runs.held_pools()))
            except Exception:  # the bus is down, say: the next start on the pool tells them
                log.exception("could not tell waiting runs where they stand")

    async def stop(self) -> None:
        """Stop everything at once (each part lets the batch in hand finish), then close the writer."""
        outcomes = await asyncio.gather(*(stop() for stop in self._stoppers), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                log.error("error while stopping", exc_info=outcome)
            elif isinstance(outcome, BaseException):
                raise outcome
        await self.writer.close()

    async def handle_command(self, cmd: Command) -> Reply:
        try:
            return await dispatch(cmd, self.deps)
        except Abandoned:  # the asker stopped waiting: the command server answers nothing
            raise
        except StoreFull as exc:
            log.error("command %s (%s) not stored: %s", cmd.id, cmd.kind.value, exc)
            return reply_parts.error_reply(
                cmd.reply_to,
                "kernelrank cannot save anything right now: the disk under its "
                "database is full, so nothing of this was kept. The team can see it in the "
                "log; try again later.",
                cmd.id,
            )
        except Exception:
            log.exception("command %s (%s) from %s failed", cmd.id, cmd.kind.value, cmd.actor.user_id)
            return reply_parts.error_reply(
                cmd.reply_to,
                "Something went wrong inside kernelrank; the team can see "
                f"the details under request {cmd.id[:8]}. Try again in a minute.",
                cmd.id,
            )

    async def _on_results(self, results: list[RunResult]) -> None:
        accepted = [r for r in results if await self.checks.result_counts(r)]
        for checked in [r for r in accepted if r.run_id in self.deps.validations]:  # a new problem's reference
            answer = await validation.finished(checked, self.deps)
            if answer is None:
                continue
            await self.bus.publish_reply(answer)
            opened = answer.data.get("state") == "open"  # a new problem, or a new version of one: time its reference
            if opened and (board := await self.deps.boards.get(answer.data["leaderboard"])):
                await reference_timing.time_board(self.deps, board)
        for rerun in [r for r in accepted if r.run_id in self.deps.reruns]:  # the podium's re-runs
            self.deps.reruns.arrived(rerun)
        for timed in [r for r in accepted if r.run_id in self.deps.references]:  # the reference, timed
            await reference_timing.arrived(timed, self.deps)
        accepted = [r for r in accepted if r.submission_id]  # 0: a run of the core's own, answered above or forgotten
        if accepted:
            await self._record_results(accepted)

    async def _record_results(self, results: list[RunResult]) -> None:
        now = datetime.now(UTC)
        recorded = await self.writer.results(
            [
                ResultRecord(
                    run_id=r.run_id,
                    result=r.result,
                    worker=r.worker,
                    attempts=r.attempts,
                    finished_at=now,
                    cost_usd=r.cost_usd,
                )
                for r in results
            ]
        )
        new = {r.run_id for r, first in zip(results, recorded.stored, strict=True) if first}  # not a repeated result
        again = [run_id for run_id in {r.run_id for r in results} - new if not self.runs.finished(run_id)]
        answer = new | (await self.db.read(self.db.store.unreplied, again) if again else set())
        costs = {r.run_id: r.cost_usd for r in results}
        runs = []
        for result in results:
            run = self.runs.result_arrived(result.run_id)
            if result.run_id not in answer:
                log.info("a repeated result for run %s was not answered again", result.run_id)
                continue
            answer.discard(result.run_id)  # a run repeated within the batch is answered once
            run = run or await self.db.read(self.db.store.run, result.run_id)
            if run is not None:
                runs.append((run, result.result))
        ranked = [run for run, result in runs if result.passed and result.mode is Mode.RANKED]
        standings = await self._standings(ranked)
        earlier = await self._previous_bests(ranked, new, recorded.previous)
        answers: list[Reply] = []
        for run, evaluation in runs:
            replies = result_replies(
                run,
                evaluation,
                standings.get((run.leaderboard, run.gpu)),
                earlier.get((run.leaderboard, run.gpu, run.person_id)),
                costs.get(run.run_id),
            )
            if (
                (run.leaderboard, run.gpu) in standings
                and (board := await self.deps.boards.get(run.leaderboard))
                and board.leaderboard.deadline
                and board.leaderboard.deadline > self.deps.now()
            ):
                replies[-1].parts.append(
                    reply_parts.text(
                        f"{time_left(board.leaderboard.deadline, self.deps.now())} before {run.leaderboard} closes."
                    )
                )  # the public reply
            answers += replies
        await self._publish_all(answers)
        self.writer.replied([run.run_id for run, _ in runs])
        self.runs.answered([r.run_id for r in results])  # only now, so a batch that failed comes back whole
        await self._publish_all(queue_news(self.runs, {r.gpu for r in results}))  # a place freed on these pools
        await self._publish_all(
            announcements((run for run, _ in runs if run.run_id in new), standings, self._announce_to)
        )

    async def _publish_all(self, replies: Iterable[Reply]) -> None:
        """Publish ``replies`` at once: they leave in this order in one write to NATS, and their acknowledgements
        are awaited together (one round trip each, one after the other, cost the core a socket write each)."""
        await asyncio.gather(*(self.bus.publish_reply(reply) for reply in replies))

    async def _previous_bests(
        self, ranked: list[RunInfo], new: set[str], before: dict[tuple[str, str, int], PreviousBest | None]
    ) -> dict[tuple[str, str, int], PreviousBest]:
        """Each author's best before these runs: as the round that stored them found it, or, where one of them was
        stored before (answered again after a crash), read apart from them."""
        keys = {(r.leaderboard, r.gpu, r.person_id) for r in ranked}
        again = {(r.leaderboard, r.gpu, r.person_id) for r in ranked if r.run_id not in new} | (keys - before.keys())
        found = {key: best for key in keys - again if (best := before[key]) is not None}
        if again:
            found |= await self.db.read(self.db.store.previous_bests, sorted(again), [r.run_id for r in ranked])
        return found

    async def _standings(self, ranked: list[RunInfo]) -> dict[tuple[str, str], dict[int, RankRow]]:
        return await rounds.standings(self.deps, ranked, TOP)

    async def _on_progress(self, events: list[RunProgress]) -> None:
        events = [e for e in events if e.submission_id and self.checks.progress_counts(e)]  # 0: the core's own
        for event in events:
            self.runs.attempt_started(event.run_id, event.attempt, event.worker)
        latest = {e.run_id: e for e in events if not self.runs.finished(e.run_id)}  # only the newest per run
        fresh = latest.keys() - self.runs.started
        if fresh:  # stored before these events are acknowledged: a started run never looks queued again
            await self.writer.running([(run_id, latest[run_id].worker) for run_id in fresh])
            self.runs.mark_started(fresh)
        # Every unfinished run is in in_flight (queued here, or found unfinished at start): one that is not has its
        # result already, and a late event must not follow the final report. No database lookup.
        await self._publish_all(
            reply_parts.progress_reply(from_jsonable(ReplyTo, run.reply_to), event.run_id, event.gpu, event.progress)
            for event in latest.values()
            if (run := self.runs.in_flight.get(event.run_id)) is not None
        )
        await self._publish_all(queue_news(self.runs, {latest[run_id].gpu for run_id in fresh}))  # runs moved up

    async def _on_dead(self, job: RunJob, deliveries: int) -> None:
        message = (
            f"This run failed {deliveries} times because the worker running it stopped responding "
            "(for example the kernel crashed the machine or hung past every limit). It will not be "
            "retried: check the kernel for hangs or memory errors and submit again."
        )
        result = EvalResult(
            status=Status.ERROR,
            mode=job.job.mode,
            problem=job.leaderboard,
            failure=Failure(kind=FailureKind.CRASH, message=message),
        )
        dead = RunResult(
            run_id=job.run_id,
            submission_id=job.submission_id,
            gpu=job.gpu,
            result=result,
            worker="dead-letter",
            attempts=deliveries,
        )
        if job.submission_id == 0:  # a run of the core's own: a reference's test run, a podium re-run
            self.deps.reruns.arrived(dead)
            answer = await validation.finished(dead, self.deps)
            if answer is not None:
                await self.bus.publish_reply(answer)
            return
        await self._record_results([dead])

    async def _recover(self) -> None:
        """Queue the runs that were stored but never queued (a crash between the two), and record the results the
        result consumer passed on before the database was restored from a backup; nothing else.

        What the database says is not enough: a run whose job a worker took, finished and reported while
        the core was down still looks queued there. JetStream knows: JOBS holds every job not yet
        acknowledged (waiting or in flight), and EVENTS keeps each result after it is read. It is listed
        before results are looked up, so a run finished in between is seen one way or the other.
        """
        queued = await self.bus.queued_run_ids()
        requeued, missed = 0, []
        for run in list(self.runs.in_flight.values()):
            if run.run_id in queued or run.run_id not in self.runs.in_flight:
                continue
            if await self.checks.has_result(run.run_id):
                # consumed before, yet unfinished here: the database was restored from a backup made before it
                if (result := await self.bus.consumed_result(run.run_id)) is not None:
                    missed.append(result)
                continue
            detail = await self.db.read(self.db.store.submission_detail, run.submission_id)
            board = await self.deps.boards.get(run.leaderboard)
            if detail is None or board is None:
                log.error("run %s cannot be queued again: its submission or leaderboard is gone", run.run_id)
                continue
            await self.jobs.publish(
                run_job(
                    board,
                    run_id=run.run_id,
                    gpu=run.gpu,
                    submission_id=run.submission_id,
                    file_name=detail.file_name,
                    source=detail.source,
                    mode=run.mode,
                )
            )
            requeued += 1
        if missed:
            log.warning("%d results stored in JetStream after the database's backup are recorded now", len(missed))
            await self._on_results(missed)
        if self.runs.in_flight:
            log.info(
                "%d runs unfinished at start: %d queued again (stored, never queued), the rest in JetStream",
                len(self.runs.in_flight),
                requeued,
            )
