"""The ``queue`` report: jobs waiting and running per GPU pool, the workers behind them, and the asker's place.

The database knows every run without a result (``Store.unfinished_runs``, oldest first); the core knows which of
them a worker has started (a progress event arrived) before the database does; the workers' ``PoolStatus``
reports say how many of them run, how much room is left, and what waits inside a backend such as Modal.
A waiting run's position is its place among the waiting runs of its pool, oldest first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from core.contracts import reply_parts
from core.contracts.messages import Part
from core.service.pools import PoolSummary
from storage.records import RunInfo


@dataclass(frozen=True)
class QueuedRun:
    run: RunInfo
    running: bool
    position: int  # 1-based among the pool's waiting runs; 0 for a running one


def place_runs(runs: Iterable[RunInfo], started: set[str]) -> list[QueuedRun]:
    """Each unfinished run (oldest first) with whether it runs and, if it waits, its position in its pool."""
    waiting: dict[str, int] = {}
    placed = []
    for run in runs:
        running = run.state == "running" or run.run_id in started
        if not running:
            waiting[run.gpu] = waiting.get(run.gpu, 0) + 1
        placed.append(QueuedRun(run=run, running=running, position=0 if running else waiting[run.gpu]))
    return placed


def queue_report(
    runs: list[RunInfo], started: set[str], pools: dict[str, PoolSummary], person_id: int
) -> tuple[list[Part], dict[str, Any]]:
    """The parts and machine-readable data of the ``queue`` reply for the person ``person_id``."""
    placed = place_runs(runs, started)
    gpus = sorted({q.run.gpu for q in placed} | set(pools))
    if not gpus:
        return [reply_parts.text("Nothing is queued or running, and no worker has reported in yet.")], {
            "pools": {},
            "mine": [],
        }
    per_pool = {
        gpu: {
            "waiting": sum(1 for q in placed if q.run.gpu == gpu and not q.running),
            "running": sum(1 for q in placed if q.run.gpu == gpu and q.running),
        }
        for gpu in gpus
    }
    rows = []
    for gpu in gpus:
        live = pools.get(gpu)
        counts = per_pool[gpu]
        counts.update(
            workers=live.workers if live else 0,
            capacity=live.capacity if live else 0,
            backlog=live.backlog if live else 0,
        )
        rows.append(
            [
                gpu,
                counts["waiting"],
                counts["running"],
                f"{live.workers} ({live.capacity} at once)" if live else "none reporting",
                live.backlog if live else "-",
            ]
        )
    parts = [reply_parts.table(["GPU", "waiting", "running", "workers", "in backend queue"], rows)]
    mine = [q for q in placed if q.run.person_id == person_id]
    if mine:
        parts.append(reply_parts.text("**Your runs**"))
        parts.append(
            reply_parts.table(
                ["submission", "leaderboard", "GPU", "mode", "state"],
                [[f"#{q.run.submission_id}", q.run.leaderboard, q.run.gpu, q.run.mode, _state_words(q)] for q in mine],
            )
        )
    else:
        parts.append(reply_parts.text("You have nothing queued or running."))
    if any(live.backlog for live in pools.values()):
        parts.append(
            reply_parts.text(
                "Jobs in a backend queue were taken by a worker and wait for a machine there "
                "(for example Modal starting a GPU container)."
            )
        )
    data = {
        "pools": per_pool,
        "mine": [
            {
                "submission_id": q.run.submission_id,
                "run_id": q.run.run_id,
                "gpu": q.run.gpu,
                "running": q.running,
                "position": q.position,
            }
            for q in mine
        ],
    }
    return parts, data


def _state_words(queued: QueuedRun) -> str:
    if queued.running:
        return "running"
    ahead = queued.position - 1
    return f"waiting, position {queued.position} ({ahead} ahead)" if ahead else "waiting, next in line"


def ahead_words(ahead: int) -> str:
    """``3 jobs ahead`` for the reply to a submission."""
    return {0: "nothing ahead", 1: "1 job ahead"}.get(ahead, f"{ahead} jobs ahead")
