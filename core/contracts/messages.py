"""Message contracts: typed, versioned, JSON on the wire.

Commands are orders (``Command`` with a ``CommandKind``), events are facts (``RunProgress``,
``RunResult``), and ``Reply`` is platform-neutral content that every adapter renders its own way.
Platform ids (Slack channel, Discord thread, ...) are opaque strings. Every message carries ``v``;
``decode`` refuses versions it does not know rather than guessing.
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.codec import DecodeError, from_jsonable, to_jsonable
from harness.job import EvalJob
from harness.result import EvalResult, Progress

WIRE_VERSION = 1
M = TypeVar("M")


def new_id() -> str:
    return uuid.uuid4().hex


class Platform(enum.StrEnum):
    CLI = "cli"
    WEB = "web"
    SLACK = "slack"
    DISCORD = "discord"


class CommandKind(enum.StrEnum):
    SUBMIT = "submit"
    LIST = "list"  # leaderboards
    SHOW = "show"  # one leaderboard's ranking per GPU
    MINE = "mine"  # my submissions to a leaderboard
    HISTORY = "history"  # my best over time on a leaderboard
    TASK = "task"  # a leaderboard's description and shapes
    TEMPLATE = "template"  # starter file for a language
    SUBMISSION = "submission"  # one submission's detail and code
    STATS = "stats"  # global figures
    QUEUE = "queue"  # jobs waiting and running per GPU, and the asker's position
    EVAL_CODE = "eval-code"  # the evaluation harness's own source, so nothing of the pipeline is hidden
    TOKEN = "token"  # personal API tokens: args["action"] new (shown once) | list | revoke | whoami
    ISSUE_TOKEN = "issue-token"  # (admins) a token for a person known only at the terminal: args["name"]
    BOARD_CREATE = "board-create"  # (admins) a leaderboard from a problem's files, validated before it opens
    BOARD_UPDATE = "board-update"  # (admins) new files (a new version) or settings
    BOARD_CLOSE = "board-close"  # (admins) its deadline becomes now
    BOARD_REOPEN = "board-reopen"  # (admins) a new deadline, or none
    BOARD_DELETE = "board-delete"  # (admins) hidden with its history kept, or purged
    CHALLENGE_CREATE = "challenge-create"  # (admins) leaderboards grouped between an opening and a close
    CHALLENGE_UPDATE = "challenge-update"  # (admins) its leaderboards, times or channels, before it closes
    CHALLENGE_CANCEL = "challenge-cancel"  # (admins) nothing more is scheduled for it
    CHALLENGES = "challenges"  # upcoming, open (time left) and closed (winners)
    CHALLENGE = "challenge"  # one challenge's standings, or its verified results
    TEAM_ADD = "team-add"  # (admins) people into a team, for team standings
    ROLE = "role"  # (admins) grant or revoke admin / creator
    BAN = "ban"  # (admins) stop a person from submitting
    UNBAN = "unban"  # (admins) let them again
    INVALIDATE = "invalidate"  # (admins) a submission out of every ranking, kept and marked
    LIMIT = "limit"  # (admins) a person's own rate limit
    AUDIT = "audit"  # (admins) the audit log
    PERSON = "person"  # someone's public page: entries with ranks, progress, latest runs
    LINK = "link"  # join two accounts into one person: no args shows a code, args["code"] uses one
    UNLINK = "unlink"  # split the asker's account off the person it was linked into
    ADMIN_LINK = "admin-link"  # (admins) join args["person"] and args["other"]
    ADMIN_UNLINK = "admin-unlink"  # (admins) split args["person"] (an account, or a person's every link)
    REPORT = "report"  # flag args["id"] for the admins, with args["reason"]
    REVIEW = "review"  # (admins) open cases; args["id"]: one case; with args["decide"] cheat|fine: close it
    BACKUP = "backup"  # (admins) a consistent copy of the database, written by the running core: args["path"]


SERVER_MANAGER = "Manage Server"  # the role the Discord adapter adds for a member with Manage Server (or Administrator)


@dataclass
class Actor:
    platform: Platform
    user_id: str
    display_name: str = ""
    roles: list[str] = field(default_factory=list)


@dataclass
class ReplyTo:
    """Where answers go; kept with the submission so late results still find their thread."""

    platform: Platform
    channel: str = ""
    thread: str = ""
    message: str = ""
    user: str = ""  # the platform user to mention in late replies


@dataclass
class Attachment:
    name: str
    content: bytes


@dataclass
class Command:
    """An order from a person. Who they are is what a chat adapter vouches for (``actor`` on Slack or Discord),
    or, from the API process, the SHA-256 of the personal token the request carried: the core resolves it to a
    person and ignores ``actor`` then. The hash never appears in a repr (logs), as it stands for the token."""

    actor: Actor
    reply_to: ReplyTo
    kind: CommandKind
    args: dict[str, Any] = field(default_factory=dict)
    attachment: Attachment | None = None
    credential_sha256: str = field(default="", repr=False)  # hex SHA-256 of an API token; "" from chat adapters
    answer_within_s: float = 0.0  # how long the asker waits for the answer, from sending; 0: no limit (answer_by.py)
    id: str = field(default_factory=new_id)
    v: int = WIRE_VERSION


@dataclass
class RunJob:
    """One evaluation of one submission on one GPU type; the run id is the idempotency key.

    ``result_key`` signs what the worker reports for this run (``core.contracts.signing``): only workers read jobs,
    so a result or progress event signed with it comes from a worker that was handed this run.
    """

    run_id: str
    submission_id: int
    leaderboard: str
    gpu: str
    job: EvalJob
    result_key: str = field(default="", repr=False)
    v: int = WIRE_VERSION


@dataclass
class RunProgress:
    run_id: str
    submission_id: int
    gpu: str
    progress: Progress
    attempt: int = 1  # the job's delivery this event belongs to
    worker: str = ""  # the worker that sends it; its subject must say the same (core.contracts.subjects.publisher)
    signature: str = ""  # HMAC under the job's result key (core.contracts.signing)
    v: int = WIRE_VERSION


@dataclass
class RunResult:
    run_id: str
    submission_id: int
    gpu: str
    result: EvalResult
    worker: str = ""
    attempts: int = 1
    cost_usd: float | None = None  # estimated price of the GPU time (result.gpu_s); None where runs are not billed
    signature: str = ""  # HMAC under the job's result key (core.contracts.signing): unsigned, the core drops it
    v: int = WIRE_VERSION


@dataclass
class PoolStatus:
    """A worker's periodic word on its GPU pool, for ``queue``: what it runs and what waits inside its backend."""

    gpu: str
    worker: str
    backend: str  # "local" | "modal" | "github" | "fake"
    running: int  # jobs this worker is running now
    capacity: int  # jobs it may run at once
    backlog: int = 0  # jobs waiting inside the backend itself (Modal's own queue), beyond NATS
    at: float = 0.0  # Unix time of the report
    v: int = WIRE_VERSION


class PartKind(enum.StrEnum):
    TEXT = "text"  # a paragraph; **bold** and `code` spans allowed
    TABLE = "table"  # headers + rows of strings
    CODE = "code"  # a code block (text + language)
    IMAGE = "image"  # bytes (PNG) + filename
    STATUS = "status"  # one status line: text + tone
    MENTION = "mention"  # text holds a user id on the reply's platform
    CHART = "chart"  # a line chart: text = title, headers = [x label, y label],
    # rows = [[series, x, y]] with x an ISO 8601 time or a number and y a number


class Tone(enum.StrEnum):
    INFO = "info"
    SUCCESS = "success"
    WARNING = "warning"
    ERROR = "error"


@dataclass
class Part:
    kind: PartKind
    text: str = ""
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    language: str = ""
    data: bytes = b""
    filename: str = ""
    tone: Tone = Tone.INFO


@dataclass
class Reply:
    """What the core answers, rendered by the adapter of ``reply_to.platform``.

    Announcements (a ranked result changed the top 3 of a leaderboard on a GPU) are replies too: the core
    sends one to each configured announcement channel, with ``data["kind"] == "announcement"`` and
    ``data["leaderboard"]``, ``data["gpu"]`` and ``data["top"]`` (``[[rank, display name, score_us], ...]``);
    adapters post them as a plain message in that channel, not in a thread.
    """

    reply_to: ReplyTo
    parts: list[Part]
    title: str = ""
    tone: Tone = Tone.INFO
    in_reply_to: str = ""  # the command id, or the run id for run updates
    update_key: str = ""  # replies with the same key update one message (live progress)
    final: bool = True  # False for progress updates
    ephemeral: bool = False  # only the requester should see it, where the platform allows
    data: dict[str, Any] = field(default_factory=dict)  # machine-readable extras (ids) for clients
    id: str = field(default_factory=new_id)  # also the JetStream Nats-Msg-Id: a repeat is dropped
    v: int = WIRE_VERSION


def still_coming(answer: Reply) -> set[str]:
    """The ids whose final replies complete a command's first answer when it says more follows (``final`` False), on
    the same route: a submission's runs, listed by its acceptance, or else the command itself (``admin create`` while
    the problem's reference runs). Every front end follows these until each has its final reply."""
    if answer.final or answer.tone is Tone.ERROR:
        return set()
    return {str(run["run_id"]) for run in answer.data.get("runs", [])} or {answer.in_reply_to}


def encode(message: Any) -> bytes:
    return json.dumps(to_jsonable(message), separators=(",", ":"), allow_nan=False).encode()


def decode(cls: type[M], payload: bytes | str) -> M:
    """Parse a wire payload into ``cls``; raise ``DecodeError`` with a readable reason."""
    try:
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise DecodeError("a message must be a JSON object")
    if data.get("v", WIRE_VERSION) != WIRE_VERSION:
        raise DecodeError(f"unsupported message version {data.get('v')!r} (this build speaks {WIRE_VERSION})")
    return from_jsonable(cls, data)


__all__ = [
    "Actor",
    "Attachment",
    "Command",
    "CommandKind",
    "DecodeError",
    "Part",
    "PartKind",
    "Platform",
    "PoolStatus",
    "Reply",
    "ReplyTo",
    "RunJob",
    "RunProgress",
    "RunResult",
    "SERVER_MANAGER",
    "Tone",
    "decode",
    "encode",
    "new_id",
    "still_coming",
    "to_jsonable",
]
