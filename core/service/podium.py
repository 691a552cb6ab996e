"""At a challenge's close: freeze the standings, verify the podium, and count team points.

**The verification rule** (docs/challenges.md). The top three of each (leaderboard, GPU) are re-run in ranked mode
on that GPU with a fresh secret seed that nobody has seen. An entry's *interval* is its original run's score
interval: the geometric means of its shapes' 95 % confidence bounds (its score alone when it has none). A re-run
that does not pass, that brings no result within ``verify_timeout_s``, or whose score falls outside the interval
widened by ``verify_tolerance`` (10 % by default: ``[low × 0.9, high × 1.1]``) is **held** for an admin's review
and gets no medal; the others are **verified**. Two podium entries whose intervals overlap are reported as a
**tie**: the measurement cannot tell them apart, whatever their order.

**Team points** (when teams are set): each (leaderboard, GPU) gives its frozen top ten ``POINTS`` by rank (10, 6,
4, 3, 2, then 1 for ranks 6 to 10); a held entry scores nothing. A team's points are its members' sum.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
from collections import Counter
from datetime import datetime
from typing import Any

from core.contracts.messages import RunResult, new_id
from core.service.deps import Deps
from core.service.jobs import run_job
from core.service.leaderboards import Board
from core.service.rounds import rounds_of
from storage.records import RankRow

log = logging.getLogger(__name__)

PODIUM = 3
FROZEN = 10
MEDALS = ("🥇", "🥈", "🥉")
POINTS = {1: 10, 2: 6, 3: 4, 4: 3, 5: 2, **dict.fromkeys(range(6, FROZEN + 1), 1)}


async def close_standings(deps: Deps, leaderboards: list[str], closes_at: datetime) -> list[dict[str, Any]]:
    """Each (leaderboard, GPU): its frozen top ten and its verified podium, of the round in force at the close
    (a leaderboard reopened before a late close keeps its new round out)."""
    boards = []
    for name in leaderboards:
        board = await deps.boards.get(name)
        if board is None:
            log.warning("the challenge's leaderboard %s is gone; it has no standings", name)
            continue
        rounds = rounds_of(deps, name)
        window = rounds.window(rounds.number_at(closes_at))
        for gpu in board.leaderboard.gpus:
            frozen = await deps.db.read(deps.db.store.ranking, name, gpu, FROZEN, window)
            podium = await verify(deps, board, gpu, frozen[:PODIUM])
            boards.append({"leaderboard": name, "gpu": gpu, "podium": podium, "frozen": [_row(row) for row in frozen]})
    return boards


async def verify(deps: Deps, board: Board, gpu: str, top: list[RankRow]) -> list[dict[str, Any]]:
    """The podium's entries, each re-run with a fresh seed and judged by the rule above."""
    fresh = Board(dataclasses.replace(board.leaderboard, secret_seed=secrets.randbits(62)), board.problem)
    waits: dict[str, asyncio.Future[RunResult]] = {}  # run_id -> its re-run's result
    run_ids = [new_id() for _ in top]
    for row, run_id in zip(top, run_ids, strict=True):
        detail = await deps.db.read(deps.db.store.submission_detail, row.submission_id)
        if detail is None:  # erased since the standings were read: its leaderboard was purged during the close
            log.warning("podium submission #%s is gone; it is not re-run and is held", row.submission_id)
            continue
        waits[run_id] = deps.reruns.expect(run_id)
        await deps.publish_job(
            run_job(
                fresh,
                run_id=run_id,
                gpu=gpu,
                submission_id=0,
                file_name=detail.file_name,
                source=detail.source,
                mode="ranked",
            )
        )
    done, _ = await asyncio.wait(waits.values(), timeout=deps.settings.verify_timeout_s) if waits else (set(), set())
    entries = []
    for row, run_id in zip(top, run_ids, strict=True):
        wait = waits.get(run_id)
        result = wait.result() if wait in done else None
        interval = await deps.db.read(deps.db.store.challenges.interval, row.run_id) or (row.score_us, row.score_us)
        entries.append(
            {**_row(row), "interval": list(interval), **judge(result, interval, deps.settings.verify_tolerance)}
        )
    for run_id in run_ids:  # a re-run still out is waited for no longer
        deps.reruns.forget(run_id)
    mark_ties(entries)
    return entries


def judge(rerun: RunResult | None, interval: tuple[float, float], tolerance: float) -> dict[str, Any]:
    if rerun is None:
        return {"verdict": "held", "reason": "its re-run brought no result in time", "rerun_us": None}
    result = rerun.result
    if not result.passed or result.score_us is None:
        why = result.failure.message if result.failure else result.status.value
        return {"verdict": "held", "reason": f"its re-run did not pass: {why}", "rerun_us": None}
    low, high = interval[0] * (1 - tolerance), interval[1] * (1 + tolerance)
    if not low <= result.score_us <= high:
        return {
            "verdict": "held",
            "rerun_us": result.score_us,
            "reason": f"its re-run scored {result.score_us:.2f} µs, outside {low:.2f} to {high:.2f} µs (its "
            f"interval widened by {tolerance:.0%})",
        }
    return {"verdict": "verified", "reason": "", "rerun_us": result.score_us}


def mark_ties(entries: list[dict[str, Any]]) -> None:
    """Note, on each entry, the ranks of the others whose intervals overlap its own."""
    for entry in entries:
        low, high = entry["interval"]
        entry["tie_with"] = [
            other["rank"]
            for other in entries
            if other is not entry and other["interval"][0] <= high and low <= other["interval"][1]
        ]


def team_points(boards: list[dict[str, Any]], teams: dict[int, str]) -> list[list[Any]]:
    """[team, points] best first, from the frozen standings (held entries score nothing)."""
    if not teams:
        return []
    held = {(b["leaderboard"], b["gpu"], e["person_id"]) for b in boards for e in b["podium"] if e["verdict"] == "held"}
    points: Counter[str] = Counter()
    for board in boards:
        for row in board["frozen"]:
            team = teams.get(row["person_id"])
            if team and (board["leaderboard"], board["gpu"], row["person_id"]) not in held:
                points[team] += POINTS.get(row["rank"], 0)
    return [[team, score] for team, score in sorted(points.items(), key=lambda item: (-item[1], item[0]))]


def _row(row: RankRow) -> dict[str, Any]:
    return {
        "rank": row.rank,
        "person_id": row.person_id,
        "name": row.display_name,
        "score_us": row.score_us,
        "submission_id": row.submission_id,
        "run_id": row.run_id,
    }
