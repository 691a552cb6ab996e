"""``Store``: the core's handle on its DuckDB file, the only public way in.

One DuckDB connection per process, opened by the core alone (stack.md 5.1). Methods are synchronous and
thread-safe: the core calls them through ``asyncio.to_thread``. Every call works on its own cursor, so reads
run concurrently; writes are serialised by a lock and each method is one transaction, so a batch is stored
whole or not at all. A write that fails because the disk is full raises ``StoreFull`` and keeps nothing of
the batch; what was committed before stays intact, and writes work again once there is room. Writes go in two
lanes, *intake* and *outcomes*, that may commit at the same time (``_lanes.py``: the connection and its lanes).

What rarely changes and the store alone writes is kept in memory as well, and read from there without DuckDB
(so the core may call those reads on its event loop): the challenges and rounds (``store.challenges``) and the
reference times (``store.references``); each write of them updates the copy once committed.

DuckDB runs each statement on one thread (``threads=1``): the core's statements are small, and handing
them to a second thread costs more than it saves (docs/benchmarks.md, issue 7). The SQL lives in
``_writes.py`` (writes), ``_ranking.py`` (the ranking rule and queries), ``_queries.py`` (other reads),
``_tokens.py`` (personal API tokens), ``_boards.py`` (leaderboards managed live: versions, deletion), ``_links.py``
(one person across platforms), ``_people.py`` (a person's page) and ``_reports.py`` (reports and review
decisions). Parts with methods of their own hang off the store: ``store.challenges``, ``store.admin``,
``store.reports``, ``store.tokens`` (``_token_records.py``) and ``store.references`` (``_reference.py``: the
problem's reference timed on each GPU).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from storage import _boards, _links, _people, _progress, _queries, _ranking, _writes
from storage._admin import AdminRecords
from storage._backup import BackupFacts, write_backup
from storage._challenges import Challenges
from storage._lanes import Cursor, Lanes
from storage._reference import ReferenceTimes
from storage._reports import Reports
from storage._schema import migrate
from storage._summaries import BoardCounts
from storage._time import as_utc
from storage._token_records import TokenRecords
from storage.records import (
    GlobalStats,
    GpuBest,
    HistoryRow,
    Leaderboard,
    LeaderboardSummary,
    NewSubmission,
    PersonSummary,
    PreviousBest,
    RankRow,
    Recorded,
    ResultRecord,
    RunInfo,
    Submission,
    SubmissionDetail,
    WriteBatch,
)

log = logging.getLogger(__name__)


class Store:
    """The DuckDB file of one kernelrank installation: schema, writes and the ranking/history queries."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lanes = Lanes(self.path)
        self._con = self._lanes.con
        self._reading, self._writing = self._lanes.reading, self._lanes.writing
        self.challenges = Challenges(self._reading, self._writing)  # challenges, their actions, teams
        self.admin = AdminRecords(self._reading, self._writing)  # roles, bans, limits, invalidations, audit
        self.reports = Reports(self._reading, self._writing)  # reports on submissions, review decisions
        self.tokens = TokenRecords(self._reading, self._writing)  # personal API tokens
        self.references = ReferenceTimes(self._reading, self._writing)  # the reference timed on each GPU
        try:
            # Instants come back in UTC whatever the host's zone; GLOBAL so that every cursor inherits it.
            self._con.execute("SET GLOBAL TimeZone = 'UTC'")
            migrate(self._con)
            self.challenges.remember()
            self.references.remember()
            self._counts = BoardCounts()  # submissions per leaderboard and person, counted once here
            with self._reading() as cur:
                self._counts.recount(cur)
        except BaseException:
            self._con.close()
            raise
        log.info("opened database %s", self.path)

    def close(self) -> None:
        """Checkpoint (fold the WAL into the file) and close, once no call is in flight; a second close does nothing."""
        self._lanes.close()

    def backup(self, path: Path) -> BackupFacts:
        """A consistent copy of the database at ``path`` (a new file), taken while writes go on (``_backup``)."""
        with self._reading() as cur:
            return write_backup(cur, path)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _changing_submissions(self, lane: str = "intake") -> Iterator[Cursor]:
        """A write that adds, moves or erases submissions: it updates ``_counts`` while it holds the intake lock
        (so the counts change in the order the writes commit); if it fails, the counts are counted again."""
        try:
            with self._writing(lane) as cur:
                yield cur
        except BaseException:
            self._counts.stale = True
            raise

    # Leaderboards

    def upsert_leaderboard(self, lb: Leaderboard) -> None:
        """Create or update; an existing leaderboard keeps its stored secret_seed and created_at."""
        with self._writing() as cur:
            _writes.upsert_leaderboard(cur, lb)

    def save_leaderboard(self, lb: Leaderboard, now: datetime) -> None:
        """Create or update a leaderboard from chat or the terminal, keeping its problem as ``lb.version``."""
        with self._writing() as cur:
            _boards.save(cur, lb, as_utc(now))

    def leaderboard_name_taken(self, name: str) -> bool:
        with self._reading() as cur:
            return _boards.name_taken(cur, name)

    def delete_leaderboard(self, name: str, now: datetime, purge: bool = False) -> int:
        """Hide it (its history stays), or with ``purge`` erase it and everything under it; the submissions erased."""
        if purge:
            with self._changing_submissions() as cur:
                self._counts.forget(name)
                erased = _boards.purge(cur, name)
            self.challenges.remember()  # its rounds went with it
            return erased
        with self._changing_submissions() as cur:
            _boards.hide(cur, name, as_utc(now))
        return 0

    def deleted_leaderboard(self, name: str) -> str | None:
        """The stored name of a deleted (hidden) leaderboard called ``name``, if there is one."""
        with self._reading() as cur:
            return _boards.deleted_name(cur, name)

    def restore_leaderboard(self, name: str) -> None:
        """Show a deleted leaderboard again, with its history."""
        with self._writing() as cur:
            _boards.restore(cur, name)

    def submission_version(self, submission_id: int) -> int:
        with self._reading() as cur:
            return _boards.submission_version(cur, submission_id)

    def get_leaderboard(self, name: str) -> Leaderboard | None:
        with self._reading() as cur:
            return _queries.get_leaderboard(cur, name)

    def list_leaderboards(self) -> list[LeaderboardSummary]:
        if self._counts.stale:  # a write failed after counting
            with self._lanes.intake_lock, self._reading() as cur:
                self._counts.recount(cur)
        with self._reading() as cur:
            return _queries.list_leaderboards(cur, self._counts.per_board())

    # People

    def person(self, platform: str, user_id: str, display_name: str) -> int:
        """The person id behind a platform identity, created on first sight; a new display name is kept."""
        with self._reading() as cur:
            found = _queries.identity(cur, platform, user_id)
        if found is not None and display_name in ("", found[1]):
            return found[0]
        with self._writing() as cur:
            return _writes.person(cur, platform, user_id, display_name)

    def find_person(self, platform: str, user_id: str) -> int | None:
        """The person behind a platform identity, without creating one."""
        with self._reading() as cur:
            found = _queries.identity(cur, platform, user_id)
        return found and found[0]

    def link_people(self, kept: int, joined: int, now: datetime) -> None:
        """Fold ``joined`` into ``kept``: identities, submissions, live tokens, ranking entries. Unlinking undoes it."""
        with self._changing_submissions("both") as cur:
            _links.link(cur, kept, joined, as_utc(now))
            self._counts.recount(cur, [kept, joined])

    def unlink_people(
        self, person_id: int, identity: tuple[str, str] | None, token_sha: str | None, now: datetime
    ) -> list[tuple[int, int]]:
        """Undo the link that brought ``identity`` (or the token) into ``person_id``, else all its links."""
        with self._changing_submissions("both") as cur:
            split = _links.unlink(cur, person_id, identity, token_sha, as_utc(now))
            self._counts.recount(cur, list({person for pair in split for person in pair}))
            return split

    def identities(self, person_id: int) -> list[tuple[str, str, str]]:
        """(platform, user id, display name) of each of a person's accounts."""
        with self._reading() as cur:
            return _links.identities(cur, person_id)

    def people_named(self, name: str) -> list[tuple[int, str]]:
        """(person_id, display name) of the people whose display name is ``name`` (case ignored)."""
        with self._reading() as cur:
            return _queries.people_named(cur, name)

    # Submissions and runs

    def add_submissions(self, items: list[NewSubmission]) -> list[Submission]:
        """Store a batch in one transaction, idempotent on command_id; one Submission per item, in order."""
        if not items:
            return []
        with self._changing_submissions() as cur:
            stored = _writes.add_submissions(cur, items)
            self._counts.add((s.leaderboard, s.person_id) for s in stored if s.created)
            return stored

    def mark_running(self, run_id: str, worker: str) -> None:
        self.mark_running_many([(run_id, worker)])

    def mark_running_many(self, items: list[tuple[str, str]]) -> None:
        """Mark (run_id, worker) pairs running in one transaction; done runs stay done."""
        if not items:
            return
        with self._writing("outcomes") as cur:
            _writes.mark_running(cur, items)

    def record_results(self, items: list[ResultRecord]) -> list[bool]:
        """Store results in one transaction, idempotent on run_id: True where this call stored the result.

        False means the run already had a result, or (logged as a warning) no such run exists.
        """
        if not items:
            return []
        with self._writing("outcomes") as cur:
            return _writes.record_results(cur, items)[0]

    def write(self, batch: WriteBatch) -> Recorded:
        """Running marks, then results, then replied marks, in one transaction of the outcomes lane; returns
        ``record_results``'s answer for ``batch.results`` and the entries those results counted on before."""
        finished = {record.run_id for record in batch.results}
        running = [mark for mark in batch.running if mark[0] not in finished]  # a result marks its run done anyway
        with self._writing("outcomes") as cur:
            if running:
                _writes.mark_running(cur, running)
            stored, before = _writes.record_results(cur, batch.results) if batch.results else ([], {})
            _writes.mark_replied(cur, batch.replied)
            return Recorded(stored, _ranking.previous_entries(cur, before))

    def mark_replied(self, run_ids: list[str]) -> None:
        with self._writing("outcomes") as cur:
            _writes.mark_replied(cur, run_ids)

    def unreplied(self, run_ids: list[str]) -> set[str]:
        """The finished runs among ``run_ids`` whose final reply is not noted as sent."""
        with self._reading() as cur:
            return _queries.unreplied(cur, run_ids)

    def run(self, run_id: str) -> RunInfo | None:
        with self._reading() as cur:
            return _queries.run(cur, run_id)

    def unfinished_runs(self) -> list[RunInfo]:
        """Runs without a result (queued or running), oldest first: what to resume after a restart."""
        with self._reading() as cur:
            return _queries.unfinished_runs(cur)

    def recent_runs(self, since: datetime) -> list[tuple[int, str, str, datetime]]:
        """(person_id, leaderboard, gpu, submitted at) of every run submitted since ``since``, oldest first (rate
        limits)."""
        with self._reading() as cur:
            return _queries.recent_runs(cur, as_utc(since))

    def count_submissions_since(self, person_id: int, since: datetime) -> int:
        with self._reading() as cur:
            return _queries.count_submissions_since(cur, person_id, as_utc(since))

    def audit(self, actor: str, action: str, detail: dict[str, Any]) -> None:
        with self._writing() as cur:
            _writes.audit(cur, actor, action, detail)

    # Ranking and history: the one set of queries every surface uses

    def ranking(
        self,
        leaderboard: str,
        gpu: str,
        limit: int | None = None,
        window: tuple[datetime | None, datetime | None] | None = None,
        offset: int = 0,
    ) -> list[RankRow]:
        """Best passed ranked run per person on (leaderboard, gpu), best first; ties go to the earlier one.
        ``window``: a round's (since, until), counting only the submissions sent in it; None: all time.
        ``offset``: the rows of the pages before this one, skipped."""
        with self._reading() as cur:
            return _ranking.ranking(cur, leaderboard, gpu, limit, window=window, offset=offset)

    def ranking_page(
        self,
        leaderboard: str,
        gpu: str,
        limit: int,
        offset: int,
        window: tuple[datetime | None, datetime | None] | None,
        person_id: int,
    ) -> list[RankRow]:
        """Ranks ``offset`` + 1 to ``offset`` + ``limit`` (in a round's ``window``; None: all time) and the entry of
        ``person_id`` (0: nobody) wherever it stands, by rank, in one read: what ``show`` lists."""
        with self._reading() as cur:
            return _ranking.page(cur, leaderboard, gpu, limit, offset, window, person_id)

    def rank_of(self, leaderboard: str, gpu: str, person_id: int) -> RankRow | None:
        with self._reading() as cur:
            rows = _ranking.ranking(cur, leaderboard, gpu, people=[person_id])
        return rows[0] if rows else None

    def standing(
        self,
        leaderboard: str,
        gpu: str,
        people: list[int],
        top: int,
        window: tuple[datetime | None, datetime | None] | None = None,
    ) -> list[RankRow]:
        """The first ``top`` entries and those of ``people``, by rank (in a round's ``window``; None: all time): what
        a result's reply and an announcement need, without reading every entry of a board with thousands."""
        with self._reading() as cur:
            return _ranking.ranking(cur, leaderboard, gpu, people=people, top=top, window=window)

    def leader(self, leaderboard: str, gpu: str) -> RankRow | None:
        rows = self.ranking(leaderboard, gpu, limit=1)
        return rows[0] if rows else None

    def rebuild_rankings(self) -> int:
        """Recompute every person's entry, and the summaries, from the stored runs (after a bulk import); returns
        the entry count."""
        with self._changing_submissions("both") as cur:
            self._counts.recount(cur)
            return _ranking.rebuild(cur)

    def history(self, leaderboard: str, person_id: int, gpu: str | None = None, limit: int = 50) -> list[HistoryRow]:
        """That person's runs on the leaderboard, newest submission first."""
        with self._reading() as cur:
            return _queries.history(cur, leaderboard, person_id, gpu, limit)

    def best_over_time(self, leaderboard: str, person_id: int, gpu: str) -> list[tuple[datetime, float]]:
        """(submission time, best score so far) where the best changed, and at the latest run, oldest first; at
        most ``storage._progress.MAX_POINTS``."""
        with self._reading() as cur:
            series = _progress.progress(cur, person_id, leaderboard, gpu).get((leaderboard, gpu))
        return series.points if series else []

    def previous_bests(
        self, keys: list[tuple[str, str, int]], exclude: list[str]
    ) -> dict[tuple[str, str, int], PreviousBest]:
        """Each (leaderboard, gpu, person)'s best ranked run other than the ``exclude`` runs, with its shapes."""
        with self._reading() as cur:
            rows = _ranking.previous_bests(cur, keys, exclude)
        found: dict[tuple[str, str, int], PreviousBest] = {}
        for leaderboard, gpu, person_id, submission_id, run_id, spec, median_us in rows:
            best = found.setdefault((leaderboard, gpu, person_id), PreviousBest(submission_id, run_id, []))
            best.shapes.append((json.loads(spec), median_us))
        return found

    def cross_gpu(self, leaderboard: str) -> list[GpuBest]:
        with self._reading() as cur:
            return _ranking.cross_gpu(cur, leaderboard)

    def submission_detail(self, submission_id: int) -> SubmissionDetail | None:
        with self._reading() as cur:
            return _queries.submission_detail(cur, submission_id)

    def person_summary(self, person_id: int, runs: int = 50) -> PersonSummary | None:
        """A person's entries with their ranks and latest runs; None for nobody (or someone linked into another)."""
        with self._reading() as cur:
            return _people.summary(cur, person_id, runs)

    def previous_submission(self, submission_id: int) -> tuple[int, str, str] | None:
        """(id, file name, source) of the author's submission to the same leaderboard before this one."""
        with self._reading() as cur:
            return _people.previous(cur, submission_id)

    def stats(self) -> GlobalStats:
        with self._reading() as cur:
            return _queries.stats(cur)
