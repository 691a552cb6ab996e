"""Helpers for the storage tests: a builder of submissions and results, raw file reads, child processes."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from harness.result import EvalResult, Mode, ShapeStats, Status
from storage import Store
from storage.records import NewSubmission, ResultRecord, Submission

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def eval_result(
    status: Status = Status.PASSED, score_us: float | None = 10.0, mode: Mode = Mode.RANKED, shapes: int = 2
) -> EvalResult:
    stats = [
        ShapeStats(
            spec={"size": 1024 << k},
            n=100,
            median_us=9.0 + k,
            mean_us=9.5 + k,
            trimmed_mean_us=9.4,
            std_us=0.2,
            ci_low_us=8.9,
            ci_high_us=9.2,
            min_us=8.5,
            p10_us=8.8,
            p90_us=9.9,
            max_us=12.0,
            first_call_us=30.0,
            achieved_gbps=900.0,
            peak_fraction=0.3,
        )
        for k in range(shapes)
    ]
    return EvalResult(
        status=status,
        mode=mode,
        problem="vecadd",
        shapes=stats,
        score_us=score_us if status is Status.PASSED else None,
        gpu_s=1.25,
    )


@dataclass
class Builder:
    """Makes people, submissions and results with unique ids and increasing times."""

    store: Store
    leaderboard: str = "vecadd"
    _ids: Iterator[int] = field(default_factory=itertools.count)

    def person(self, name: str) -> int:
        return self.store.person("cli", name.lower(), name)

    def new(
        self,
        person_id: int,
        gpus: tuple[str, ...] = ("H100",),
        mode: str = "ranked",
        at: datetime | None = None,
        source: str | None = None,
        leaderboard: str | None = None,
    ) -> NewSubmission:
        n = next(self._ids)
        return NewSubmission(
            command_id=f"cmd-{n}",
            person_id=person_id,
            leaderboard=leaderboard or self.leaderboard,
            file_name="submission.py",
            source=source or f"def custom_kernel(data):  # {n}\n",
            mode=mode,
            runs=[(f"run-{n}-{gpu}", gpu) for gpu in gpus],
            reply_to={"platform": "cli", "channel": "c", "thread": "", "message": ""},
            created_at=at or T0 + timedelta(minutes=n),
        )

    def submit(
        self, person_id: int, score_us: float | None = 10.0, status: Status = Status.PASSED, **new_args: object
    ) -> Submission:
        """Store one submission and a result for each of its runs."""
        (submission,) = self.store.add_submissions([self.new(person_id, **new_args)])
        self.store.record_results([self.result(run_id, score_us, status) for run_id, _ in submission.runs])
        return submission

    def result(self, run_id: str, score_us: float | None = 10.0, status: Status = Status.PASSED) -> ResultRecord:
        return ResultRecord(
            run_id=run_id,
            result=eval_result(status, score_us),
            worker="w1",
            attempts=1,
            finished_at=T0 + timedelta(days=1),
        )


def raw_rows(path: Path, sql: str) -> list[tuple]:
    """Read the file directly (the store must be closed): checks what is really on disk."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def python_child(code: str) -> subprocess.Popen[str]:
    """A separate Python process running ``code`` from the repository root."""
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
