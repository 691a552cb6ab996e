"""The typed records the store takes and returns.

Inputs (``Leaderboard``, ``NewSubmission``, ``ResultRecord``) are what the core hands over; every other
record is a read model built by one query in ``storage/_queries.py`` or ``storage/_ranking.py``. Times are
timezone-aware UTC datetimes, scores microseconds (``*_us``). ``status`` is a ``harness.result.Status`` value
and stays ``None`` until the run is done; ``state`` is ``queued``, ``running`` or ``done``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.result import EvalResult


@dataclass(frozen=True)
class Leaderboard:
    name: str
    description: str
    problem: dict[str, Any]  # Problem.to_dict()
    problem_sha: str
    gpus: list[str]
    ranking_by: str
    secret_seed: int  # kept from the stored row once it exists: never rotated by an upsert
    deadline: datetime | None = None
    created_at: datetime | None = None
    public_after_close: bool = False  # once the deadline has passed, everyone may see its submissions' code
    version: int = 1  # the problem's version: 1 when created, one more at each update of its files
    opens_at: datetime | None = None  # submissions are refused before it
    created_by: int | None = None  # the person who created it from chat or the terminal; None for seed problems


@dataclass(frozen=True)
class LeaderboardSummary:
    name: str
    description: str
    gpus: list[str]
    deadline: datetime | None
    submissions: int
    people: int
    opens_at: datetime | None = None
    version: int = 1


@dataclass(frozen=True)
class NewSubmission:
    command_id: str  # idempotency key: a repeat returns the stored submission
    person_id: int
    leaderboard: str
    file_name: str
    source: str
    mode: str
    runs: list[tuple[str, str]]  # (run_id, gpu), one run per GPU
    reply_to: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class Submission:
    id: int
    command_id: str
    person_id: int
    leaderboard: str
    file_name: str
    code_sha: str
    mode: str
    created_at: datetime
    runs: list[tuple[str, str]]  # (run_id, gpu)
    created: bool  # False when the command id was already stored


@dataclass(frozen=True)
class ResultRecord:
    run_id: str
    result: EvalResult
    worker: str
    attempts: int
    finished_at: datetime
    cost_usd: float | None = None  # estimated price of the run's GPU time; None where runs are not billed
    replied: bool = False  # the user already has their answer (a submission refused after storing)


@dataclass(frozen=True)
class WriteBatch:
    """What happened to runs, committed in one transaction of the store's outcomes lane (a commit costs ms)."""

    running: list[tuple[str, str]] = field(default_factory=list)  # (run_id, worker)
    results: list[ResultRecord] = field(default_factory=list)
    replied: list[str] = field(default_factory=list)  # runs whose final reply has gone out


@dataclass(frozen=True)
class Recorded:
    """What a round of the outcomes lane did with its results: for each, whether this round stored it (not a repeat);
    and for each (leaderboard, GPU, person) a stored result counts on, that person's entry before the round, with its
    shapes (None: there was none): what a result's report compares with, read in the round that changes it."""

    stored: list[bool] = field(default_factory=list)
    previous: dict[tuple[str, str, int], PreviousBest | None] = field(default_factory=dict)


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    submission_id: int
    gpu: str
    state: str
    status: str | None
    score_us: float | None
    leaderboard: str
    person_id: int
    display_name: str
    mode: str
    reply_to: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class RunDetail:
    info: RunInfo
    result: dict[str, Any] | None  # EvalResult.to_dict(), None until the run is done
    worker: str | None
    attempts: int
    finished_at: datetime | None


@dataclass(frozen=True)
class SubmissionDetail:
    id: int
    command_id: str
    leaderboard: str
    person_id: int
    display_name: str
    file_name: str
    mode: str
    code_sha: str
    source: str
    reply_to: dict[str, Any]
    created_at: datetime
    runs: list[RunDetail] = field(default_factory=list)


@dataclass(frozen=True)
class RankRow:
    rank: int  # 1-based and distinct: equal scores are ordered by submission time
    person_id: int
    display_name: str
    score_us: float
    submission_id: int
    run_id: str
    submitted_at: datetime


@dataclass(frozen=True)
class PreviousBest:
    """A person's best ranked run on a (leaderboard, GPU) apart from the runs just finished, shape by shape."""

    submission_id: int
    run_id: str
    shapes: list[tuple[dict[str, Any], float | None]]  # (spec, median_us) in shape order


@dataclass(frozen=True)
class HistoryRow:
    submission_id: int
    run_id: str
    gpu: str
    mode: str
    status: str | None  # None while the run is queued or running
    score_us: float | None
    created_at: datetime
    file_name: str


@dataclass(frozen=True)
class GpuBest:
    gpu: str
    leader_person_id: int | None  # None (and people 0) for a GPU nobody has a ranked pass on yet
    leader_name: str | None
    best_score_us: float | None
    people: int


@dataclass(frozen=True)
class GlobalStats:
    people: int
    leaderboards: int
    submissions: int
    runs: int
    runs_by_status: dict[str, int]  # done runs by status; unfinished ones under "queued" / "running"
    gpu_seconds: float  # sum of the results' gpu_s
    cost_usd: float = 0.0  # sum of the runs' estimated costs
    by_gpu: list[GpuUsage] = field(default_factory=list)


@dataclass(frozen=True)
class GpuUsage:
    """GPU time and money one pool has used, over every finished run."""

    gpu: str
    runs: int
    gpu_seconds: float
    cost_usd: float


@dataclass(frozen=True)
class NewToken:
    sha256: str  # hex SHA-256 of the token: the token itself is never stored
    prefix: str  # its first characters, shown to tell tokens apart
    person_id: int
    label: str  # where it came from: "discord", "slack", "kernelrank up", "issued by Ada"
    created_at: datetime


@dataclass(frozen=True)
class TokenInfo:
    """A token as its owner (or an admin) sees it in a list: never the token, never its hash."""

    prefix: str
    person_id: int
    display_name: str
    label: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class TokenOwner:
    """Who a token belongs to, as the core needs it to let a command through."""

    prefix: str
    person_id: int
    display_name: str
    identities: list[str]  # the person's "platform:user_id" identities (admins are configured by these)
    revoked_at: datetime | None


@dataclass(frozen=True)
class Challenge:
    """Leaderboards grouped between an opening and a close; ``announce`` holds ``platform:channel`` entries."""

    title: str
    leaderboards: list[str]
    opens_at: datetime
    closes_at: datetime
    announce: list[str] = field(default_factory=list)
    created_by: int | None = None
    id: int = 0  # 0 until stored
    cancelled_at: datetime | None = None
    results: dict[str, Any] | None = None  # set at the close: frozen standings and the verified podium
    done: frozenset[str] = frozenset()  # scheduled actions done ("open", "remind-1h", "close")
    deadline_of: str | None = None  # the leaderboard whose own deadline this is (None: scheduled by an admin)


@dataclass(frozen=True)
class PersonBest:
    leaderboard: str
    gpu: str
    rank: int
    score_us: float
    submission_id: int


@dataclass(frozen=True)
class PersonRun:
    submission_id: int
    leaderboard: str
    file_name: str
    mode: str
    created_at: datetime
    gpu: str
    status: str | None
    score_us: float | None


@dataclass(frozen=True)
class Series:
    """A best score over time on one leaderboard and GPU, thinned to what a chart draws (storage/_progress.py)."""

    runs: int  # passed ranked runs it summarises
    points: list[tuple[datetime, float]]  # (submission time, best score so far in µs), oldest first


@dataclass(frozen=True)
class PersonSummary:
    """What a person's public page shows: their entries (with ranks), their progress on each, their latest runs."""

    person_id: int
    display_name: str
    bests: list[PersonBest]
    runs: list[PersonRun]
    progress: dict[tuple[str, str], Series]  # by (leaderboard, GPU)


@dataclass(frozen=True)
class Report:
    """Someone's flag on a submission for the admins; open until an admin's review decides it."""

    id: int
    submission_id: int
    reporter_id: int
    reporter_name: str
    reason: str
    created_at: datetime
    resolution: str | None = None  # "cheat" or "fine", once decided
    resolved_at: datetime | None = None


@dataclass(frozen=True)
class HeldRun:
    """A ranked run the static pre-check held for review: stored with its score, not ranked until an admin decides."""

    submission_id: int
    run_id: str
    gpu: str
    score_us: float | None
    message: str
    finished_at: datetime
