"""The store's reads, apart from the rankings (storage/_ranking.py holds the ranking rule and its queries)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import duckdb

from storage._sql import one_row, placeholders
from storage._time import as_utc
from storage.records import (
    GlobalStats,
    GpuUsage,
    HistoryRow,
    Leaderboard,
    LeaderboardSummary,
    RunDetail,
    RunInfo,
    Submission,
    SubmissionDetail,
)

Cursor = duckdb.DuckDBPyConnection


_RUN_COLUMNS = """
    r.run_id, r.submission_id, r.gpu, r.state, r.status, r.score_us, s.leaderboard, s.person_id,
    coalesce(p.display_name, ''), s.mode, s.reply_to, r.created_at::TIMESTAMP
"""
# LEFT JOIN people: a run must never drop out of recovery or detail because its person row is missing.
_RUN_TABLES = "FROM runs r JOIN submissions s ON s.id = r.submission_id LEFT JOIN people p ON p.id = s.person_id"
_RUN_INFO = f"SELECT {_RUN_COLUMNS} {_RUN_TABLES}"
_RUN_DETAIL = f"SELECT {_RUN_COLUMNS}, r.result, r.worker, r.attempts, r.finished_at::TIMESTAMP {_RUN_TABLES}"


def _run_info(row: Sequence[Any]) -> RunInfo:
    run_id, submission_id, gpu, state, status, score_us, leaderboard, person_id, name, mode, reply_to, at = row[:12]
    return RunInfo(
        run_id,
        submission_id,
        gpu,
        state,
        status,
        score_us,
        leaderboard,
        person_id,
        name,
        mode,
        json.loads(reply_to),
        as_utc(at),
    )


def _run_detail(row: Sequence[Any]) -> RunDetail:
    result, worker, attempts, finished_at = row[12:]
    return RunDetail(
        info=_run_info(row),
        result=None if result is None else json.loads(result),
        worker=worker,
        attempts=attempts,
        finished_at=finished_at and as_utc(finished_at),
    )


def identity(cur: Cursor, platform: str, user_id: str) -> tuple[int, str] | None:
    """(person_id, display name) of a platform identity."""
    return cur.execute(
        "SELECT person_id, display_name FROM identities WHERE platform = ? AND user_id = ?", [platform, user_id]
    ).fetchone()


def get_leaderboard(cur: Cursor, name: str) -> Leaderboard | None:
    """The leaderboard called ``name``, unless it was deleted (hidden)."""
    row = cur.execute(
        """SELECT name, description, problem, problem_sha, gpus, ranking_by, secret_seed,
                  deadline::TIMESTAMP, created_at::TIMESTAMP, coalesce(public_after_close, false),
                  coalesce(version, 1), opens_at::TIMESTAMP, created_by
           FROM leaderboards WHERE name = ? AND hidden_at IS NULL""",
        [name],
    ).fetchone()
    if row is None:
        return None
    (
        name,
        description,
        problem,
        problem_sha,
        gpus,
        ranking_by,
        secret_seed,
        deadline,
        created_at,
        public,
        version,
        opens_at,
        created_by,
    ) = row
    return Leaderboard(
        name=name,
        description=description,
        problem=json.loads(problem),
        problem_sha=problem_sha,
        gpus=gpus,
        ranking_by=ranking_by,
        secret_seed=secret_seed,
        deadline=deadline and as_utc(deadline),
        created_at=as_utc(created_at),
        public_after_close=public,
        version=version,
        opens_at=opens_at and as_utc(opens_at),
        created_by=created_by,
    )


def list_leaderboards(cur: Cursor, counts: dict[str, tuple[int, int]]) -> list[LeaderboardSummary]:
    """The leaderboards not hidden, with ``counts`` (leaderboard -> submissions, people: ``storage/_summaries.py``)."""
    rows = cur.execute(
        """SELECT name, description, gpus, deadline::TIMESTAMP, opens_at::TIMESTAMP, coalesce(version, 1)
           FROM leaderboards WHERE hidden_at IS NULL ORDER BY name"""
    ).fetchall()
    return [
        LeaderboardSummary(
            name,
            description,
            gpus,
            deadline and as_utc(deadline),
            *counts.get(name, (0, 0)),
            opens_at and as_utc(opens_at),
            version,
        )
        for name, description, gpus, deadline, opens_at, version in rows
    ]


def submissions_by_command(cur: Cursor, command_ids: list[str]) -> dict[str, Submission]:
    """Stored submissions for these command ids (created=False), with their runs ordered by GPU."""
    rows = cur.execute(
        f"""SELECT id, command_id, person_id, leaderboard, file_name, code_sha, mode, created_at::TIMESTAMP
           FROM submissions WHERE command_id IN ({placeholders(command_ids)})""",
        command_ids,
    ).fetchall()
    if not rows:  # the usual case; the runs lookup below scans the runs table
        return {}
    runs: dict[int, list[tuple[str, str]]] = {row[0]: [] for row in rows}
    for submission_id, run_id, gpu in cur.execute(
        f"""SELECT submission_id, run_id, gpu FROM runs WHERE submission_id IN ({placeholders(runs)})
               ORDER BY gpu, run_id""",
        list(runs),
    ).fetchall():
        runs[submission_id].append((run_id, gpu))
    return {
        command_id: Submission(
            sub_id, command_id, person_id, board, file_name, code_sha, mode, as_utc(at), runs[sub_id], created=False
        )
        for sub_id, command_id, person_id, board, file_name, code_sha, mode, at in rows
    }


def intake_lookup(cur: Cursor, command_ids: list[str], shas: list[str]) -> tuple[list[str], set[str], list[int]]:
    """In one statement: the command ids already stored, the code sha256s already stored, and, when no command id
    is stored, one new submission id per command id (ascending; none otherwise, so that none is wasted)."""
    rows = cur.execute(
        f"""WITH known AS (SELECT command_id FROM submissions WHERE command_id IN ({placeholders(command_ids)}))
            SELECT 'command', command_id, NULL FROM known
            UNION ALL
            SELECT 'code', sha256, NULL FROM code_blobs WHERE sha256 IN ({placeholders(shas)})
            UNION ALL
            SELECT 'id', NULL, nextval('submission_id_seq') FROM range(?) WHERE NOT EXISTS (FROM known)""",
        [*command_ids, *shas, len(command_ids)],
    ).fetchall()
    known = [value for kind, value, _ in rows if kind == "command"]
    return known, {value for kind, value, _ in rows if kind == "code"}, sorted(i for kind, _, i in rows if kind == "id")


def next_submission_ids(cur: Cursor, count: int) -> list[int]:
    return [i for (i,) in cur.execute("SELECT nextval('submission_id_seq') FROM range(?)", [count]).fetchall()]


def run_states(cur: Cursor, run_ids: list[str]) -> dict[str, str]:
    """run_id -> state for the runs among ``run_ids`` that exist."""
    if not run_ids:
        return {}
    rows = cur.execute(f"SELECT run_id, state FROM runs WHERE run_id IN ({placeholders(run_ids)})", run_ids)
    return dict(rows.fetchall())


def unreplied(cur: Cursor, run_ids: list[str]) -> set[str]:
    """The finished runs among ``run_ids`` whose final reply has not been noted as sent."""
    if not run_ids:
        return set()
    rows = cur.execute(
        f"SELECT run_id FROM runs WHERE state = 'done' AND replied_at IS NULL AND run_id IN ({placeholders(run_ids)})",
        run_ids,
    )
    return {run_id for (run_id,) in rows.fetchall()}


def run(cur: Cursor, run_id: str) -> RunInfo | None:
    row = cur.execute(_RUN_INFO + " WHERE r.run_id = ?", [run_id]).fetchone()
    return None if row is None else _run_info(row)


def unfinished_runs(cur: Cursor) -> list[RunInfo]:
    rows = cur.execute(_RUN_INFO + " WHERE r.state <> 'done' ORDER BY r.created_at, r.run_id").fetchall()
    return [_run_info(row) for row in rows]


def count_submissions_since(cur: Cursor, person_id: int, since: datetime) -> int:
    (count,) = one_row(
        cur.execute("SELECT count(*) FROM submissions WHERE person_id = ? AND created_at >= ?", [person_id, since])
    )
    return count


def people_named(cur: Cursor, name: str) -> list[tuple[int, str]]:
    """(person_id, display name) of everyone whose display name is ``name``, ignoring case."""
    # a person folded into another by a link is that other person now
    return cur.execute(
        """SELECT id, display_name FROM people WHERE lower(display_name) = lower(?)
                          AND id NOT IN (SELECT joined_person_id FROM person_links WHERE undone_at IS NULL)
                          ORDER BY id""",
        [name],
    ).fetchall()


def recent_runs(cur: Cursor, since: datetime) -> list[tuple[int, str, str, datetime]]:
    """(person_id, leaderboard, gpu, submitted at) of every run submitted since ``since``, oldest first: what rate
    limits count.

    Both tables are filtered on their insertion-ordered ``created_at``, so DuckDB's zone maps skip every row group
    but the newest: the cost stays flat however many runs are stored.
    """
    rows = cur.execute(
        """SELECT s.person_id, s.leaderboard, r.gpu, s.created_at::TIMESTAMP
           FROM submissions s JOIN runs r ON r.submission_id = s.id
           WHERE s.created_at >= $since AND r.created_at >= $since
           ORDER BY s.created_at""",
        {"since": since},
    ).fetchall()
    return [(person_id, board, gpu, as_utc(at)) for person_id, board, gpu, at in rows]


def history(cur: Cursor, leaderboard: str, person_id: int, gpu: str | None, limit: int) -> list[HistoryRow]:
    rows = cur.execute(
        """SELECT s.id, r.run_id, r.gpu, s.mode, r.status, r.score_us, s.created_at::TIMESTAMP, s.file_name
           FROM submissions s JOIN runs r ON r.submission_id = s.id
           WHERE s.leaderboard = $leaderboard AND s.person_id = $person_id AND ($gpu IS NULL OR r.gpu = $gpu)
           ORDER BY s.created_at DESC, s.id DESC, r.gpu
           LIMIT $limit""",
        {"leaderboard": leaderboard, "person_id": person_id, "gpu": gpu, "limit": limit},
    ).fetchall()
    return [
        HistoryRow(sub_id, run_id, gpu, mode, status, score_us, as_utc(at), file_name)
        for sub_id, run_id, gpu, mode, status, score_us, at, file_name in rows
    ]


def submission_detail(cur: Cursor, submission_id: int) -> SubmissionDetail | None:
    row = cur.execute(
        """SELECT s.id, s.command_id, s.leaderboard, s.person_id, coalesce(p.display_name, ''), s.file_name, s.mode,
                  s.code_sha,
                  c.source, s.reply_to, s.created_at::TIMESTAMP
           FROM submissions s LEFT JOIN people p ON p.id = s.person_id JOIN code_blobs c ON c.sha256 = s.code_sha
           WHERE s.id = ?""",
        [submission_id],
    ).fetchone()
    if row is None:
        return None
    runs = cur.execute(_RUN_DETAIL + " WHERE r.submission_id = ? ORDER BY r.gpu, r.run_id", [submission_id]).fetchall()
    sub_id, command_id, board, person_id, name, file_name, mode, code_sha, source, reply_to, at = row
    return SubmissionDetail(
        sub_id,
        command_id,
        board,
        person_id,
        name,
        file_name,
        mode,
        code_sha,
        source,
        json.loads(reply_to),
        as_utc(at),
        [_run_detail(run_row) for run_row in runs],
    )


def stats(cur: Cursor) -> GlobalStats:
    people, leaderboards, submissions = one_row(
        cur.execute(
            """SELECT (SELECT count(*) FROM people), (SELECT count(*) FROM leaderboards),
                  (SELECT count(*) FROM submissions)"""
        )
    )
    by_status = cur.execute(
        "SELECT coalesce(status, state), count(*), coalesce(sum(gpu_s), 0) FROM runs GROUP BY ALL"
    ).fetchall()
    by_gpu = [
        GpuUsage(*row)
        for row in cur.execute(
            """SELECT gpu, count(*), coalesce(sum(gpu_s), 0), coalesce(sum(cost_usd), 0) FROM runs
           WHERE state = 'done' GROUP BY gpu ORDER BY gpu"""
        ).fetchall()
    ]
    return GlobalStats(
        people=people,
        leaderboards=leaderboards,
        submissions=submissions,
        runs=sum(count for _, count, _ in by_status),
        runs_by_status={key: count for key, count, _ in by_status},
        gpu_seconds=float(sum(seconds for _, _, seconds in by_status)),
        cost_usd=float(sum(usage.cost_usd for usage in by_gpu)),
        by_gpu=by_gpu,
    )
