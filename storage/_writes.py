"""The store's writes. Each function runs inside the transaction that ``Store`` opened on ``cur``.

Rows go in through DuckDB appenders (one flush per table per batch, inside the transaction), not
``executemany`` or multi-row ``VALUES``: binding parameters costs tens of microseconds each, so a batch of
50 results with their shapes took ~35 ms as ``VALUES`` and ~3 ms appended (stack.md 5.2 has the bulk figures).
Appenders cannot skip conflicts, so idempotency is decided first by key lookups: the command id for
submissions, the sha256 for code, the run's state for results. Writers are serialised by ``Store``, so
nothing changes between the lookup and the write.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import duckdb

from harness.result import EvalResult
from storage import _queries, _ranking
from storage._sql import one_row, placeholders
from storage._time import as_utc
from storage.records import Leaderboard, NewSubmission, ResultRecord, Submission

log = logging.getLogger(__name__)

Cursor = duckdb.DuckDBPyConnection
T = TypeVar("T")


def _append(cur: Cursor, table: str, rows: Sequence[Sequence[Any]], **options: Any) -> None:
    """Write ``rows`` with one appender flush inside the cursor's transaction (``options``: columns, action, key)."""
    if rows:
        with cur.appender(table, **options) as appender:
            appender.append_rows(rows)


def _finite(value: Any) -> Any:
    """Non-finite floats become None: JSON has no NaN, and a NaN score must never rank."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def upsert_leaderboard(cur: Cursor, lb: Leaderboard) -> None:
    """Insert or update; an existing row keeps its secret_seed, created_at and creator (seeds never rotate silently)."""
    cur.execute(
        """INSERT INTO leaderboards (name, description, problem, problem_sha, gpus, ranking_by, deadline,
                                     secret_seed, created_at, updated_at, public_after_close, version, opens_at,
                                     created_by)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, coalesce(?::TIMESTAMPTZ, now()), now(), ?, ?, ?, ?)
           ON CONFLICT (name) DO UPDATE SET
               description = excluded.description, problem = excluded.problem, problem_sha = excluded.problem_sha,
               gpus = excluded.gpus, ranking_by = excluded.ranking_by, deadline = excluded.deadline,
               updated_at = excluded.updated_at, public_after_close = excluded.public_after_close,
               version = excluded.version, opens_at = excluded.opens_at""",
        [
            lb.name,
            lb.description,
            json.dumps(lb.problem),
            lb.problem_sha,
            list(lb.gpus),
            lb.ranking_by,
            lb.deadline and as_utc(lb.deadline),
            lb.secret_seed,
            lb.created_at and as_utc(lb.created_at),
            lb.public_after_close,
            lb.version,
            lb.opens_at and as_utc(lb.opens_at),
            lb.created_by,
        ],
    )


def person(cur: Cursor, platform: str, user_id: str, display_name: str) -> int:
    """Create-or-get the person behind (platform, user_id); a non-empty new display name replaces the old."""
    found = _queries.identity(cur, platform, user_id)
    if found is None:
        (person_id,) = one_row(
            cur.execute("INSERT INTO people (display_name) VALUES (?) RETURNING id", [display_name or user_id])
        )
        cur.execute(
            "INSERT INTO identities (platform, user_id, person_id, display_name) VALUES (?, ?, ?, ?)",
            [platform, user_id, person_id, display_name or user_id],
        )
        return person_id
    person_id, current_name = found
    if display_name and display_name != current_name:
        cur.execute(
            "UPDATE identities SET display_name = ? WHERE platform = ? AND user_id = ?",
            [display_name, platform, user_id],
        )
        cur.execute("UPDATE people SET display_name = ? WHERE id = ?", [display_name, person_id])
    return person_id


def _firsts(items: Sequence[T], key: Callable[[T], str]) -> dict[str, T]:
    """The first item of each key, in batch order: a key repeated in one batch is stored once."""
    firsts: dict[str, T] = {}
    for item in items:
        firsts.setdefault(key(item), item)
    return firsts


def _first_of_each(keys: Sequence[str]) -> list[bool]:
    """For each key, whether it is its first occurrence: only that one can report "stored by this call"."""
    seen: set[str] = set()
    flags = []
    for key in keys:
        flags.append(key not in seen)
        seen.add(key)
    return flags


def add_submissions(cur: Cursor, items: Sequence[NewSubmission]) -> list[Submission]:
    """Store new submissions with their code and queued runs; a known command id returns what is stored."""
    firsts = _firsts(items, lambda item: item.command_id)
    encoded = {cmd: item.source.encode() for cmd, item in firsts.items()}
    shas = {cmd: hashlib.sha256(data).hexdigest() for cmd, data in encoded.items()}
    # one statement in the usual round (no command stored before): the stored code, and ids for every item
    known, known_shas, new_ids = _queries.intake_lookup(cur, list(firsts), list(set(shas.values())))
    stored = _queries.submissions_by_command(cur, known) if known else {}
    fresh = {cmd: item for cmd, item in firsts.items() if cmd not in stored}
    if known:  # a repeated command: ids only for the fresh ones, so that submission numbers have no gaps
        new_ids = _queries.next_submission_ids(cur, len(fresh))
    blobs = {
        shas[cmd]: (shas[cmd], item.source, len(encoded[cmd]))
        for cmd, item in fresh.items()
        if shas[cmd] not in known_shas
    }
    _append(cur, "code_blobs", list(blobs.values()))
    ids = dict(zip(fresh, new_ids, strict=True))
    _append(
        cur,
        "submissions",
        [
            (
                ids[cmd],
                cmd,
                item.person_id,
                item.leaderboard,
                item.file_name,
                shas[cmd],
                item.mode,
                json.dumps(item.reply_to),
                as_utc(item.created_at),
            )
            for cmd, item in fresh.items()
        ],
        columns=[
            "id",
            "command_id",
            "person_id",
            "leaderboard",
            "file_name",
            "code_sha",
            "mode",
            "reply_to",
            "created_at",
        ],
    )
    _append(
        cur,
        "runs",
        [
            (run_id, ids[cmd], gpu, "queued", as_utc(item.created_at))
            for cmd, item in fresh.items()
            for run_id, gpu in item.runs
        ],
        columns=["run_id", "submission_id", "gpu", "state", "created_at"],
    )
    stored.update(
        {
            cmd: Submission(
                id=ids[cmd],
                command_id=cmd,
                person_id=item.person_id,
                leaderboard=item.leaderboard,
                file_name=item.file_name,
                code_sha=shas[cmd],
                mode=item.mode,
                created_at=as_utc(item.created_at),
                runs=list(item.runs),
                created=True,
            )
            for cmd, item in fresh.items()
        }
    )
    commands = [item.command_id for item in items]
    return [
        replace(stored[cmd], created=stored[cmd].created and first)
        for cmd, first in zip(commands, _first_of_each(commands), strict=True)
    ]


def _by_key(run_ids: Sequence[str]) -> str:
    """A ``WHERE`` condition for the runs ``run_ids``, found through the key's index. ``UPDATE ... WHERE run_id IN
    (...)`` scans every run once the list has more than a few ids (DuckDB 2.0, measured at 1M runs: 20 ids 23 ms
    that way, 3.4 ms by the rows the index finds; 80k runs: 3.1 and 2.3 ms)."""
    return f"rowid IN (SELECT rowid FROM runs WHERE run_id IN ({placeholders(run_ids)}))"


def mark_running(cur: Cursor, items: Sequence[tuple[str, str]]) -> None:
    """Move (run_id, worker) runs to running; a run that is already done is left alone. One ``UPDATE`` per worker
    name (the core sends one); an appender with ``action="update"`` joins on the key instead, and costs more."""
    by_worker: dict[str, list[str]] = {}
    for run_id, worker in dict(items).items():
        by_worker.setdefault(worker, []).append(run_id)
    for worker, run_ids in by_worker.items():
        cur.execute(
            f"UPDATE runs SET state = 'running', worker = ? WHERE state <> 'done' AND {_by_key(run_ids)}",
            [worker, *run_ids],
        )


def record_results(
    cur: Cursor, items: Sequence[ResultRecord]
) -> tuple[list[bool], dict[_ranking.Key, _ranking.Entry | None]]:
    """Store each result once, keyed by run id: True where this call stored it; and the entries these results may
    change, as they were before them (``_ranking.refresh``)."""
    firsts = _firsts(items, lambda item: item.run_id)
    states = _queries.run_states(cur, list(firsts))
    for run_id in firsts.keys() - states.keys():
        log.warning("result for unknown run %s dropped: no stored submission has that run", run_id)
    new = {run_id: item for run_id, item in firsts.items() if states.get(run_id) in ("queued", "running")}
    results = {run_id: _result_json(item.result) for run_id, item in new.items()}
    _append(
        cur,
        "runs",
        [
            (
                run_id,
                "done",
                item.result.status.value,
                data["score_us"],
                text,
                item.worker,
                item.attempts,
                data["gpu_s"],
                _finite(item.cost_usd),
                as_utc(item.finished_at),
                as_utc(item.finished_at) if item.replied else None,
            )
            for (run_id, item), (data, text) in zip(new.items(), results.values(), strict=True)
        ],
        columns=[
            "run_id",
            "state",
            "status",
            "score_us",
            "result",
            "worker",
            "attempts",
            "gpu_s",
            "cost_usd",
            "finished_at",
            "replied_at",
        ],
        action="update",
        key=["run_id"],
    )
    _append(
        cur,
        "shape_results",
        [
            (
                run_id,
                index,
                json.dumps(shape["spec"]),
                shape["n"],
                shape["median_us"],
                shape["mean_us"],
                shape["ci_low_us"],
                shape["ci_high_us"],
                shape["min_us"],
                shape["p90_us"],
                shape["achieved_gbps"],
                shape["peak_fraction"],
            )
            for run_id, (data, _) in results.items()
            for index, shape in enumerate(data["shapes"])
        ],
    )
    before = _ranking.refresh(cur, list(new))
    run_ids = [item.run_id for item in items]
    return [run_id in new and first for run_id, first in zip(run_ids, _first_of_each(run_ids), strict=True)], before


def mark_replied(cur: Cursor, run_ids: Sequence[str]) -> None:
    """Note that these runs' final replies went out (each is answered once, however often its result comes)."""
    if run_ids:
        cur.execute(
            f"UPDATE runs SET replied_at = now() WHERE replied_at IS NULL AND {_by_key(run_ids)}",
            list(run_ids),
        )


def _result_json(result: EvalResult) -> tuple[dict[str, Any], str]:
    """The result as a dict and its JSON text; non-finite floats become null (JSON has no NaN; NaN never ranks)."""
    data = result.to_dict()
    try:
        return data, json.dumps(data, allow_nan=False)
    except ValueError:
        log.warning("result of a %s run has non-finite numbers; stored as null", result.mode.value)
        data = _finite(data)
        return data, json.dumps(data, allow_nan=False)


def audit(cur: Cursor, actor: str, action: str, detail: dict[str, Any]) -> None:
    cur.execute(
        "INSERT INTO audit_log (actor, action, detail) VALUES (?, ?, ?)",
        [actor, action, json.dumps(detail, default=str)],
    )
