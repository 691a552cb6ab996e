"""Command handlers: plain functions taking the command first, then who sent it, then their dependencies.

``dispatch`` finds out who sent a command (``core.service.people``: a chat identity the adapter vouched for, or a personal
token), then runs its handler. Each handler validates, asks the store, and returns one ``Reply``. Bad input raises
``UserError`` (shown to the user as it is, with its code in ``data["error"]``). The table at the bottom maps every
``CommandKind`` to its handler.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from core.contracts import report
from core.contracts.commands import check_lengths, decode_source, normalise_mode, parse_headers
from core.contracts.config import Settings
from core.contracts.errors import NotFound, RateLimited, UserError, shown
from core.contracts.messages import Command, CommandKind, Reply, RunJob, new_id
from core.service.access import check_can_see
from core.service.db import Database, Writer
from core.service.harness_source import eval_code_report
from core.service.jobs import run_job
from core.service.leaderboards import Board, BoardCache
from core.service.people import CHAT_PLATFORMS, Caller, People
from core.service.pools import InFlight, PoolBoard
from core.service.queueing import ahead_words, queue_report
from core.service.ratelimit import RateLimiter
from core.service.submitting import REFUSED_AGAIN, OncePerCommand, queue_jobs, withdrawn
from core.service.tokens import token
from harness.codec import to_jsonable
from storage.records import Leaderboard, NewSubmission, RunInfo, Submission

log = logging.getLogger(__name__)


@dataclass
class Deps:
    db: Database
    settings: Settings
    publish_job: Callable[[RunJob], Awaitable[bool]]
    writer: Writer
    limiter: RateLimiter
    boards: BoardCache
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    people: People = None                                   # type: ignore[assignment]  # made from db and settings
    in_flight: InFlight = field(default_factory=InFlight)   # runs queued (or found queued at start), until their result
    submitting: OncePerCommand = field(default_factory=OncePerCommand)   # submissions being handled, by command
    started: set[str] = field(default_factory=set)          # run ids a worker has started, before the store knows
    pools: PoolBoard = field(default_factory=PoolBoard)     # the workers' latest PoolStatus reports

    def __post_init__(self) -> None:
        if self.people is None:
            self.people = People(self.db, self.settings)


async def dispatch(cmd: Command, deps: Deps) -> Reply:
    """Answer one command: who sent it, then its handler; a ``UserError`` becomes an error reply with its code."""
    try:
        handler = HANDLERS.get(cmd.kind)
        if handler is None:
            raise UserError(f"kernelrank does not know the command {cmd.kind.value!r}.")
        check_lengths(cmd)
        caller = await deps.people.caller(cmd, deps.now())
        return await handler(cmd, caller, deps)
    except UserError as exc:
        reply = report.error_reply(cmd.reply_to, str(exc), cmd.id)
        reply.data = {"error": exc.code}
        if isinstance(exc, RateLimited):
            reply.data["retry_after_s"] = exc.retry_after_s
        return reply


async def submit(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    """Accepted: stored, every job durable in JetStream. Refused: nothing stored, or withdrawn (core.service.submitting)."""
    return await deps.submitting.run(cmd.id, lambda: _submit(cmd, caller, deps))


async def _submit(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    if cmd.attachment is None:
        raise UserError("Attach the kernel file to submit (a .py file defining custom_kernel, or a .cu file).")
    source = decode_source(cmd.attachment.name, cmd.attachment.content, deps.settings.max_source_bytes)
    headers = parse_headers(source)
    board = await _leaderboard(deps, cmd.args.get("leaderboard") or headers.leaderboard)
    lb = board.leaderboard
    if lb.deadline is not None and lb.deadline <= deps.now():
        raise UserError(f"{lb.name} closed on {lb.deadline:%Y-%m-%d %H:%M} UTC; it takes no more submissions.")
    gpus = _choose_gpus(lb, cmd.args.get("gpus") or headers.gpus)
    mode = normalise_mode(cmd.args.get("mode") or headers.mode)
    person, user, now = caller.person_id, caller.display_name, deps.now()
    await deps.limiter.check(person, gpus, now, lambda since: deps.db.read(deps.db.store.recent_runs, since), cmd.id)
    chat_user = cmd.actor.user_id if cmd.actor.platform in CHAT_PLATFORMS else ""
    reply_to = dataclasses.replace(cmd.reply_to, user=cmd.reply_to.user or chat_user)
    try:
        stored = await deps.writer.submission(NewSubmission(
            command_id=cmd.id, person_id=person, leaderboard=lb.name, file_name=cmd.attachment.name,
            source=source, mode=mode, runs=[(new_id(), gpu) for gpu in gpus], reply_to=to_jsonable(reply_to),
            created_at=now))
    except BaseException:
        deps.limiter.uncount(person, gpus, now, cmd.id)
        raise
    if not stored.created:      # the command came again after it was handled: answer from what is stored
        deps.limiter.uncount(person, gpus, now)
        if any(run_id not in deps.in_flight for run_id, _ in stored.runs) and \
                withdrawn(await deps.db.read(deps.db.store.submission_detail, stored.id)):
            raise UserError(REFUSED_AGAIN)
        return _accepted(cmd, stored, mode, deps)
    runs = {run_id: RunInfo(run_id=run_id, submission_id=stored.id, gpu=gpu, state="queued", status=None,
                            score_us=None, leaderboard=lb.name, person_id=person, display_name=user, mode=mode,
                            reply_to=to_jsonable(reply_to), created_at=stored.created_at)
            for run_id, gpu in stored.runs}
    ahead = {gpu: deps.in_flight.ahead_of(run_id, gpu) for run_id, gpu in stored.runs}
    await queue_jobs([run_job(board, run_id=run_id, gpu=gpu, submission_id=stored.id, file_name=cmd.attachment.name,
                              source=source, mode=mode, reply_to=reply_to, user=user)
                      for run_id, gpu in stored.runs], deps.publish_job, deps.writer, deps.now())
    for run_id, run in runs.items():
        deps.in_flight[run_id] = run
    return _accepted(cmd, stored, mode, deps, ahead)


def _accepted(cmd: Command, stored: Submission, mode: str, deps: Deps, ahead: dict[str, int] | None = None) -> Reply:
    ahead = ahead if ahead is not None else {gpu: deps.in_flight.ahead_of(run_id, gpu) if run_id in deps.in_flight
                                             else 0 for run_id, gpu in stored.runs}
    where = " and ".join(f"{gpu}, {ahead_words(ahead[gpu])}" if len(stored.runs) == 1 else
                         f"{gpu} ({ahead_words(ahead[gpu])})" for _, gpu in stored.runs)
    return Reply(reply_to=cmd.reply_to, in_reply_to=cmd.id, final=False,
                 title=f"Submission #{stored.id} to {stored.leaderboard}",
                 parts=[report.status(f"{mode} run of {stored.file_name} queued as #{stored.id} on {where}",
                                      report.Tone.INFO)],
                 data={"submission_id": stored.id, "leaderboard": stored.leaderboard, "mode": mode,
                       "runs": [{"run_id": r, "gpu": g, "ahead": ahead[g]} for r, g in stored.runs]})


async def list_leaderboards(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    boards = await deps.db.read(deps.db.store.list_leaderboards)
    if not boards:
        return _reply(cmd, "Leaderboards", [report.text("No leaderboards yet: an admin loads problems first.")])
    rows = [[b.name, ", ".join(b.gpus) or "-", _deadline(b.deadline), b.submissions, b.people,
             b.description.strip().splitlines()[0][:60] if b.description.strip() else ""] for b in boards]
    return _reply(cmd, "Leaderboards", [report.table(["leaderboard", "GPUs", "deadline", "submissions",
                                                      "people", "about"], rows)],
                  data={"leaderboards": [{"name": b.name, "gpus": list(b.gpus),
                                          "deadline": b.deadline.isoformat() if b.deadline else None}
                                         for b in boards]})


async def show(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    board = (await _leaderboard(deps, cmd.args.get("leaderboard", ""))).leaderboard
    gpus = _choose_gpus(board, [cmd.args["gpu"]] if cmd.args.get("gpu") else [], allow_all=True)
    limit = _limit(cmd, 10)
    parts = []
    for gpu in gpus:
        rows = await deps.db.read(deps.db.store.ranking, board.name, gpu, limit)
        parts.append(report.text(f"**{board.name} on {gpu}**"))
        parts.append(report.table(["rank", "who", "score", "submission", "when"],
                                  [[r.rank, r.display_name, report.format_us(r.score_us), f"#{r.submission_id}",
                                    f"{r.submitted_at:%Y-%m-%d %H:%M}"] for r in rows])
                     if rows else report.text("No passing ranked runs yet."))
    return _reply(cmd, f"{board.name} leaderboard", parts)


async def mine(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    board = (await _leaderboard(deps, cmd.args.get("leaderboard", ""))).leaderboard
    rows = await deps.db.read(deps.db.store.history, board.name, caller.person_id, cmd.args.get("gpu"),
                              _limit(cmd, 20))
    if not rows:
        return _reply(cmd, f"Your submissions to {board.name}", [report.text("You have not submitted yet.")])
    return _reply(cmd, f"Your submissions to {board.name}", [report.table(
        ["submission", "GPU", "mode", "status", "score", "file", "when"],
        [[f"#{r.submission_id}", r.gpu, r.mode, r.status or "queued", report.format_us(r.score_us), r.file_name,
          f"{r.created_at:%Y-%m-%d %H:%M}"] for r in rows])])


async def history(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    """The asker's best over time, or another person's (scores only): ``user`` is ``platform:id``, an id on the
    asker's chat platform, or (from the terminal) a display name."""
    board = (await _leaderboard(deps, cmd.args.get("leaderboard", ""))).leaderboard
    other = str(cmd.args.get("user") or "")
    person = await _other_person(cmd, deps, other) if other else caller.person_id
    whose = "Your" if person == caller.person_id else f"{cmd.args.get('user_name') or other}'s"
    parts, series = [], []
    for gpu in _choose_gpus(board, [cmd.args["gpu"]] if cmd.args.get("gpu") else [], allow_all=True):
        points = await deps.db.read(deps.db.store.best_over_time, board.name, person, gpu)
        if points:
            parts.append(report.text(f"**{whose} best on {gpu} over time**"))
            parts.append(report.table(["when", "best"], [[f"{t:%Y-%m-%d %H:%M}", report.format_us(v)]
                                                         for t, v in points]))
            series += [(gpu, t, v) for t, v in points]
    if series:
        parts.append(report.chart(f"Best score on {board.name}", "submitted", "best score (µs)", series))
    return _reply(cmd, f"{whose} progress on {board.name}", parts or [report.text("No passing ranked runs yet.")])


async def task(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    found = await _leaderboard(deps, cmd.args.get("leaderboard", ""))
    board, problem = found.leaderboard, found.problem
    parts = [report.text(problem.task.description.strip() or problem.readme.strip() or board.name),
             report.table(["kind", "shapes"], [["tests", len(problem.task.tests)],
                                               ["benchmarks", len(problem.task.benchmarks)]]),
             report.text(f"GPUs: {', '.join(board.gpus)}. Ranked by {problem.task.ranking_by}. "
                         f"Deadline: {_deadline(board.deadline)}. "
                         f"Templates: {', '.join(problem.templates) or 'none'}.")]
    parts += [report.code(text, _language(name), filename=name) for name, text in sorted(problem.files.items())]
    return _reply(cmd, f"Task {board.name}", parts)


async def template(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    found = await _leaderboard(deps, cmd.args.get("leaderboard", ""))
    board, templates = found.leaderboard, found.problem.templates
    if not templates:
        raise UserError(f"{board.name} has no templates; see `task {board.name}` for what to write.")
    wanted = (cmd.args.get("lang") or next(iter(templates))).lower()
    match = next((lang for lang in templates if lang.lower() == wanted), None)
    if match is None:
        raise UserError(f"{board.name} has no {wanted} template; choose one of {', '.join(templates)}.")
    suffix = ".cu" if found.problem.task.lang == "cu" else ".py"
    filename = f"{board.name}-{match.lower()}{suffix}"
    return _reply(cmd, f"{match} template for {board.name}", [report.code(templates[match], _language(filename),
                                                                          filename=filename)],
                  data={"filename": filename, "source": templates[match]})


async def submission(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    sub_id = _int_arg(cmd, "id", "submission id")
    detail = await deps.db.read(deps.db.store.submission_detail, sub_id)
    if detail is None:
        raise NotFound(f"There is no submission #{sub_id}; `mine LEADERBOARD` lists yours.")
    board = await deps.boards.get(detail.leaderboard)
    check_can_see(detail, caller, board and board.leaderboard, deps.now())
    parts = [report.table(["run", "GPU", "status", "score"],
                          [[r.info.run_id[:8], r.info.gpu, r.info.status or r.info.state,
                            report.format_us(r.info.score_us)] for r in detail.runs]),
             report.code(detail.source, _language(detail.file_name), filename=detail.file_name)]
    return _reply(cmd, f"Submission #{sub_id}: {detail.file_name} by {detail.display_name} to {detail.leaderboard}",
                  parts)


async def stats(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    figures = await deps.db.read(deps.db.store.stats)
    rows = [[k.replace("_", " "), v] for k, v in vars(figures).items() if k not in ("by_gpu", "cost_usd")]
    rows.append(["estimated cost", report.format_cost(figures.cost_usd)])
    parts = [report.table(["what", "count"], rows)]
    if figures.by_gpu:
        parts.append(report.table(["GPU", "runs", "GPU hours", "estimated cost"],
                                  [[u.gpu, u.runs, f"{u.gpu_seconds / 3600:.2f}", report.format_cost(u.cost_usd)]
                                   for u in figures.by_gpu]))
    return _reply(cmd, "kernelrank in figures", parts)


async def queue(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    runs = await deps.db.read(deps.db.store.unfinished_runs)
    parts, data = queue_report(runs, deps.started, deps.pools.summary(), caller.person_id)
    return _reply(cmd, "Queue", parts, data)


async def eval_code(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    title, parts, data = eval_code_report()
    return _reply(cmd, title, parts, data)


async def _leaderboard(deps: Deps, name: str) -> Board:
    if not name:
        raise UserError("Name a leaderboard (or add `#!POPCORN leaderboard NAME` to the file); "
                        "`list` shows them.")
    board = await deps.boards.get(name)
    if board is None:
        raise NotFound(f"There is no leaderboard {shown(name)!r}; `list` shows the leaderboards.")
    return board


def _choose_gpus(board: Leaderboard, wanted: list[str], allow_all: bool = False) -> list[str]:
    if not board.gpus:
        raise UserError(f"{board.name} has no GPU to run on yet; ask an admin to add one.")
    if not wanted:
        if len(board.gpus) == 1 or allow_all:
            return list(board.gpus)
        raise UserError(f"{board.name} runs on {', '.join(board.gpus)}: choose one or more with --gpu.")
    by_name = {g.lower(): g for g in board.gpus}
    unknown = [g for g in wanted if g.lower() not in by_name]
    if unknown:
        raise UserError(f"{board.name} does not offer {', '.join(map(shown, unknown[:3]))}; it runs on "
                        f"{', '.join(board.gpus)}.")
    return list(dict.fromkeys(by_name[g.lower()] for g in wanted))


async def _other_person(cmd: Command, deps: Deps, who: str) -> int:
    """Another person, looked up (never created, never renamed) by ``platform:id``, an id on the asker's chat
    platform, or a display name from the terminal."""
    platform, sep, user_id = who.partition(":")
    if not sep and cmd.actor.platform in CHAT_PLATFORMS and not cmd.credential_sha256:
        platform, user_id = cmd.actor.platform.value, who
    if sep or user_id:
        found = await deps.db.read(deps.db.store.find_person, platform.lower(), user_id)
        if found is None:
            raise NotFound(f"kernelrank knows nobody as {shown(who)!r} yet.")
        return found
    named = await deps.db.read(deps.db.store.people_named, who)
    if len(named) != 1:
        raise (NotFound(f"kernelrank knows nobody called {shown(who)!r}; `show LEADERBOARD` lists names.")
               if not named else UserError(f"{len(named)} people are called {shown(who)!r}; name one by their "
                                           "chat id, like discord:123456."))
    return named[0][0]


def _int_arg(cmd: Command, key: str, what: str) -> int:
    try:
        return int(str(cmd.args.get(key, "")).lstrip("#"))
    except ValueError:
        raise UserError(f"Give the {what} as a number, like 42.") from None


def _limit(cmd: Command, default: int, most: int = 500) -> int:
    """How many rows to show: a number from 1 to ``most``."""
    if not cmd.args.get("limit"):
        return default
    limit = _int_arg(cmd, "limit", "limit")
    if not 1 <= limit <= most:
        raise UserError(f"Ask for 1 to {most} rows.")
    return limit


def _language(file_name: str) -> str:
    return "cuda" if file_name.endswith((".cu", ".cuh")) else "python" if file_name.endswith(".py") else ""


def _deadline(deadline: datetime | None) -> str:
    return f"{deadline:%Y-%m-%d %H:%M} UTC" if deadline else "none"


def _reply(cmd: Command, title: str, parts: list, data: dict | None = None) -> Reply:
    return Reply(reply_to=cmd.reply_to, in_reply_to=cmd.id, title=title, parts=parts, data=data or {})


HANDLERS: dict[CommandKind, Callable[[Command, Caller, Deps], Awaitable[Reply]]] = {
    CommandKind.SUBMIT: submit,
    CommandKind.LIST: list_leaderboards,
    CommandKind.SHOW: show,
    CommandKind.MINE: mine,
    CommandKind.HISTORY: history,
    CommandKind.TASK: task,
    CommandKind.TEMPLATE: template,
    CommandKind.SUBMISSION: submission,
    CommandKind.STATS: stats,
    CommandKind.QUEUE: queue,
    CommandKind.EVAL_CODE: eval_code,
    CommandKind.TOKEN: token,
}
