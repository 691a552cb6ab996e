"""The ``submit`` command: check the file, store the submission, queue one job per GPU, answer "queued".

The promise behind the answer (accepted means stored and durable in JetStream) is ``core.service.acceptance``'s.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from core.contracts import reply_parts
from core.contracts.commands import decode_source, normalise_mode, parse_headers
from core.contracts.errors import Forbidden, UserError
from core.contracts.messages import Command, Reply, new_id
from core.service.acceptance import REFUSED_AGAIN, queue_jobs, withdrawn
from core.service.admin import read_limits
from core.service.args import choose_gpus, leaderboard
from core.service.deps import Deps
from core.service.jobs import run_job
from core.service.people import CHAT_PLATFORMS, Caller
from core.service.queueing import ahead_words
from harness.codec import to_jsonable
from storage.records import Leaderboard, NewSubmission, RunInfo, Submission


async def submit(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    """Accepted: stored, every job durable in JetStream. Refused: nothing stored, or withdrawn
    (``core.service.acceptance``)."""
    return await deps.submitting.run(cmd.id, lambda: _submit(cmd, caller, deps))


async def _submit(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    if cmd.attachment is None:
        raise UserError("Attach the kernel file to submit (a .py file defining custom_kernel, or a .cu file).")
    source = decode_source(cmd.attachment.name, cmd.attachment.content, deps.settings.max_source_bytes)
    headers = parse_headers(source)
    board = await leaderboard(deps, cmd.args.get("leaderboard") or headers.leaderboard)
    lb = board.leaderboard
    mode = normalise_mode(cmd.args.get("mode") or headers.mode)
    _check_open(lb, mode, deps.now())
    wanted = cmd.args.get("gpu") or headers.gpus  # a list, or one name or comma list typed as text
    gpus = choose_gpus(lb, [wanted] if isinstance(wanted, str) else list(wanted))
    person, user, now = caller.person_id, caller.display_name, deps.now()
    if reason := await deps.db.read(deps.db.store.admin.ban_of, person):
        raise Forbidden(
            f"An admin has stopped you from submitting ({reason}); ask an admin if you think this is wrong."
        )
    if deps.limiter.own is None:
        await read_limits(deps)
    await deps.limiter.check(
        person, gpus, now, lambda since: deps.db.read(deps.db.store.recent_runs, since), cmd.id, lb.name
    )
    chat_user = cmd.actor.user_id if cmd.actor.platform in CHAT_PLATFORMS else ""
    reply_to = dataclasses.replace(cmd.reply_to, user=cmd.reply_to.user or chat_user)
    try:
        stored = await deps.writer.submission(
            NewSubmission(
                command_id=cmd.id,
                person_id=person,
                leaderboard=lb.name,
                file_name=cmd.attachment.name,
                source=source,
                mode=mode,
                runs=[(new_id(), gpu) for gpu in gpus],
                reply_to=to_jsonable(reply_to),
                created_at=now,
            )
        )
    except BaseException:
        deps.limiter.uncount(person, gpus, now, cmd.id, lb.name)
        raise
    if not stored.created:  # the command came again after it was handled: answer from what is stored
        deps.limiter.uncount(person, gpus, now, leaderboard=lb.name)
        if any(run_id not in deps.runs.in_flight for run_id, _ in stored.runs) and withdrawn(
            await deps.db.read(deps.db.store.submission_detail, stored.id)
        ):
            raise UserError(REFUSED_AGAIN)
        return _accepted(cmd, stored, mode, deps, deadline_passed=closed(lb, now))
    runs = {
        run_id: RunInfo(
            run_id=run_id,
            submission_id=stored.id,
            gpu=gpu,
            state="queued",
            status=None,
            score_us=None,
            leaderboard=lb.name,
            person_id=person,
            display_name=user,
            mode=mode,
            reply_to=to_jsonable(reply_to),
            created_at=stored.created_at,
        )
        for run_id, gpu in stored.runs
    }
    ahead = {gpu: deps.runs.in_flight.ahead_of(run_id, gpu) for run_id, gpu in stored.runs}
    await queue_jobs(
        [
            run_job(
                board,
                run_id=run_id,
                gpu=gpu,
                submission_id=stored.id,
                file_name=cmd.attachment.name,
                source=source,
                mode=mode,
            )
            for run_id, gpu in stored.runs
        ],
        deps.publish_job,
        deps.writer,
        deps.now(),
    )
    for run in runs.values():
        deps.runs.waiting_for(run)
    return _accepted(cmd, stored, mode, deps, ahead, deadline_passed=closed(lb, now))


def _check_open(lb: Leaderboard, mode: str, now: datetime) -> None:
    """Before it opens nothing runs; after its deadline, runs that are never ranked still do."""
    if lb.opens_at is not None and now < lb.opens_at:
        raise UserError(f"{lb.name} opens on {lb.opens_at:%Y-%m-%d %H:%M} UTC; submit from then on.")
    if closed(lb, now) and mode == "ranked":
        raise UserError(
            f"{lb.name} closed on {lb.deadline:%Y-%m-%d %H:%M} UTC, so it ranks no more submissions; "
            "test and benchmark runs still work (add --mode test)."
        )


def closed(lb: Leaderboard, now: datetime) -> bool:
    return lb.deadline is not None and lb.deadline <= now


def _accepted(
    cmd: Command,
    stored: Submission,
    mode: str,
    deps: Deps,
    ahead: dict[str, int] | None = None,
    *,
    deadline_passed: bool = False,
) -> Reply:
    ahead = (
        ahead
        if ahead is not None
        else {
            gpu: deps.runs.in_flight.ahead_of(run_id, gpu) if run_id in deps.runs.in_flight else 0
            for run_id, gpu in stored.runs
        }
    )
    where = " and ".join(
        f"{gpu}, {ahead_words(ahead[gpu])}" if len(stored.runs) == 1 else f"{gpu} ({ahead_words(ahead[gpu])})"
        for _, gpu in stored.runs
    )
    after = " (after the deadline: not ranked)" if deadline_passed else ""
    return Reply(
        reply_to=cmd.reply_to,
        in_reply_to=cmd.id,
        final=False,
        title=f"Submission #{stored.id} to {stored.leaderboard}",
        parts=[
            reply_parts.status(
                f"{mode} run of {stored.file_name} queued as #{stored.id} on {where}{after}", reply_parts.Tone.INFO
            )
        ],
        data={
            "submission_id": stored.id,
            "leaderboard": stored.leaderboard,
            "mode": mode,
            "ranked": mode == "ranked" and not deadline_passed,
            "runs": [{"run_id": r, "gpu": g, "ahead": ahead[g]} for r, g in stored.runs],
        },
    )
