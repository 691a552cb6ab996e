"""Reports on submissions, runs the static pre-check held, and the admins' review decisions (``report``,
``admin review``).

``Store.reports`` is a ``Reports`` on the store's cursors and locks. A report is open until a decision on its
submission closes it; the decisions are kept per submission (a held run, or a podium entry held by a challenge's
verification, is open while no decision came after it was held).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from harness.result import FailureKind
from storage import _ranking
from storage._part import StorePart
from storage._sql import one_row
from storage._time import as_utc
from storage.records import HeldRun, Report

# A ranked run that passed with a hold finding is stored failed, its failure's kind saying so
# (harness/host/precheck.py).
_HELD = f"""SELECT submission_id, run_id, gpu, score_us, json_extract_string(result, '$.failure.message'),
                   finished_at::TIMESTAMP FROM runs
            WHERE status = 'failed'
              AND json_extract_string(result, '$.failure.kind') = '{FailureKind.HELD_FOR_REVIEW.value}'"""
_COLUMNS = """r.id, r.submission_id, r.reporter_id, coalesce(p.display_name, ''), r.reason, r.created_at::TIMESTAMP,
              r.resolution, r.resolved_at::TIMESTAMP
              FROM reports r LEFT JOIN people p ON p.id = r.reporter_id"""


class Reports(StorePart):
    def add(self, submission_id: int, reporter_id: int, reason: str, now: datetime) -> int | None:
        """The new report's id; None when this person's earlier report of the submission is still open."""
        with self._writing() as cur:  # the check and the insert in one transaction: two clicks make one report
            if cur.execute(
                "SELECT 1 FROM reports WHERE submission_id = ? AND reporter_id = ? AND resolved_at IS NULL",
                [submission_id, reporter_id],
            ).fetchone():
                return None
            (report_id,) = one_row(
                cur.execute(
                    "INSERT INTO reports (submission_id, reporter_id, reason, created_at) VALUES (?, ?, ?, ?) "
                    "RETURNING id",
                    [submission_id, reporter_id, reason, as_utc(now)],
                )
            )
        return report_id

    def count_since(self, reporter_id: int, since: datetime) -> int:
        with self._reading() as cur:
            (count,) = one_row(
                cur.execute(
                    "SELECT count(*) FROM reports WHERE reporter_id = ? AND created_at >= ?",
                    [reporter_id, as_utc(since)],
                )
            )
        return count

    def open(self) -> list[Report]:
        """Every report no decision has closed, oldest first."""
        with self._reading() as cur:
            rows = cur.execute(f"SELECT {_COLUMNS} WHERE r.resolved_at IS NULL ORDER BY r.id").fetchall()
        return [_report(row) for row in rows]

    def of_submission(self, submission_id: int) -> list[Report]:
        """The submission's reports, open and closed, oldest first."""
        with self._reading() as cur:
            rows = cur.execute(f"SELECT {_COLUMNS} WHERE r.submission_id = ? ORDER BY r.id", [submission_id]).fetchall()
        return [_report(row) for row in rows]

    def decide(self, submission_id: int, decision: str, note: str, decided_by: str, now: datetime) -> int:
        """Keep the decision and close the submission's open reports with it; how many it closed."""
        with self._writing() as cur:
            closed = cur.execute(
                """UPDATE reports SET resolution = ?, resolved_at = ?
                   WHERE submission_id = ? AND resolved_at IS NULL RETURNING id""",
                [decision, as_utc(now), submission_id],
            ).fetchall()
            cur.execute(
                "INSERT INTO review_decisions VALUES (?, ?, ?, ?, ?)",
                [submission_id, decision, note, decided_by, as_utc(now)],
            )
        return len(closed)

    def last_decisions(self) -> dict[int, datetime]:
        """When each decided submission was last decided."""
        with self._reading() as cur:
            rows = cur.execute(
                "SELECT submission_id, max(decided_at)::TIMESTAMP FROM review_decisions GROUP BY submission_id"
            ).fetchall()
        return {submission_id: as_utc(at) for submission_id, at in rows}

    def held_runs(self, submission_id: int | None = None) -> list[HeldRun]:
        """The runs the pre-check held (one submission's, or everyone's), oldest first."""
        with self._reading() as cur:
            rows = cur.execute(
                f"{_HELD} AND ($sub IS NULL OR submission_id = $sub) ORDER BY finished_at, run_id",
                {"sub": submission_id},
            ).fetchall()
        return [
            HeldRun(sub, run_id, gpu, score, message or "", as_utc(at)) for sub, run_id, gpu, score, message, at in rows
        ]

    def release_held_runs(self, submission_id: int) -> int:
        """Let the submission's held runs count: passed, ranked (their stored result keeps the hold's words)."""
        with self._writing("outcomes") as cur:  # the rankings' lane
            released = [
                run_id
                for (run_id,) in cur.execute(
                    f"""UPDATE runs SET status = 'passed' WHERE run_id IN (SELECT run_id FROM ({_HELD}))
                        AND submission_id = ? RETURNING run_id""",
                    [submission_id],
                ).fetchall()
            ]
            _ranking.refresh(cur, released)
        return len(released)


def _report(row: Any) -> Report:
    id_, submission_id, reporter_id, name, reason, created_at, resolution, resolved_at = row
    return Report(
        id_,
        submission_id,
        reporter_id,
        name,
        reason,
        as_utc(created_at),
        resolution,
        resolved_at and as_utc(resolved_at),
    )
