"""A new problem's reference, run once in test mode on a worker before its leaderboard opens or changes.

The run's submission is the problem's own ``reference.py`` with ``custom_kernel = ref_kernel`` added: a copy of the
reference, since the harness trips on a submission that calls the problem's module itself. It passes exactly when
the problem can generate its inputs, run its reference and check the output: a reference that raises, a missing
function or a checker that refuses the reference shows up here, not in the first participant's run. Nothing is
stored while the run is pending (the leaderboard to be saved waits in ``Validations``, in memory): a broken
problem leaves nothing half-created. A core restart while one is pending drops it, and the admin sends the command
again. CUDA problems (``lang: cu``) have no Python reference to call: loading them is their validation.
"""

from __future__ import annotations

import logging
from datetime import datetime

from core.contracts import reply_parts
from core.contracts.bus import BusError
from core.contracts.errors import UserError
from core.contracts.messages import Reply, RunResult, Tone, new_id
from core.service.deadlines import keep_in_step
from core.service.deps import Deps
from core.service.jobs import run_job
from core.service.leaderboards import Board
from core.service.pending import Pending
from harness.problem import Problem
from storage.records import Leaderboard

log = logging.getLogger(__name__)
SUFFIX = "\n\n# kernelrank: the reference's own test run, before its leaderboard opens\ncustom_kernel = ref_kernel\n"
FILE_NAME = "validate_reference.py"


async def start(pending: Pending, problem: Problem, deps: Deps) -> str:
    """Queue the reference's run on the leaderboard's first GPU; the run id."""
    run_id = new_id()
    job = run_job(
        Board(pending.leaderboard, problem),
        run_id=run_id,
        gpu=pending.leaderboard.gpus[0],
        submission_id=0,
        file_name=FILE_NAME,
        source=source(problem),
        mode="test",
    )
    deps.validations.add(run_id, pending)
    try:
        await deps.publish_job(job)
    except BusError as exc:
        deps.validations.pop(run_id)
        raise UserError(
            "kernelrank could not queue the problem's test run just now; nothing was created. Send "
            "the command again in a minute."
        ) from exc
    return run_id


def source(problem: Problem) -> str:
    return problem.files["reference.py"] + SUFFIX


async def save(pending: Pending, deps: Deps, now: datetime) -> None:
    """Store the leaderboard, note it in the audit log, make every command see it at once, and keep its deadline's
    close scheduled."""
    await deps.db.write(deps.db.store.save_leaderboard, pending.leaderboard, now)
    await deps.db.write(
        deps.db.store.audit,
        pending.actor,
        f"leaderboard {pending.action}",
        {
            "leaderboard": pending.leaderboard.name,
            "version": pending.leaderboard.version,
            "gpus": list(pending.leaderboard.gpus),
            "deadline": pending.leaderboard.deadline and pending.leaderboard.deadline.isoformat(),
        },
    )
    deps.boards.forget(pending.leaderboard.name)
    await keep_in_step(pending.leaderboard, pending.reply_to, deps)


async def finished(result: RunResult, deps: Deps) -> Reply | None:
    """The answer to the admin once the reference's run is back (None for a run nobody waits for any more)."""
    pending = deps.validations.pop(result.run_id)
    if pending is None:
        return None
    lb = pending.leaderboard
    if not result.result.passed:
        failure = result.result.failure
        reason = failure.message if failure else f"its test run ended {result.result.status.value}"
        log.info("leaderboard %s %s refused: its reference failed its test run (%s)", lb.name, pending.action, reason)
        await deps.db.write(
            deps.db.store.audit,
            pending.actor,
            f"leaderboard {pending.action} refused",
            {"leaderboard": lb.name, "version": lb.version, "reason": reason[:500]},
        )
        parts = [
            reply_parts.text(
                f"**{lb.name}** was not {pending.action}d: its reference failed its own test run, "
                f"so nothing was stored. Fix the problem and send it again.\n{reason}"
            )
        ]
        if result.result.stderr.strip():
            parts.append(
                reply_parts.code(reply_parts.tail(result.result.stderr.strip(), 1500), "", filename="stderr.txt")
            )
        return Reply(
            reply_to=pending.reply_to,
            in_reply_to=pending.command_id,
            title=f"{lb.name} refused",
            tone=Tone.ERROR,
            parts=parts,
            data={"leaderboard": lb.name, "state": "refused", "reason": reason},
        )
    await save(pending, deps, deps.now())
    return Reply(
        reply_to=pending.reply_to,
        in_reply_to=pending.command_id,
        title=f"{lb.name} is ready",
        tone=Tone.SUCCESS,
        parts=[reply_parts.text(opened_words(lb, pending.action))],
        data={"leaderboard": lb.name, "state": "open", "version": lb.version, "gpus": list(lb.gpus)},
    )


def opened_words(lb: Leaderboard, action: str) -> str:
    when = f"until {lb.deadline:%Y-%m-%d %H:%M} UTC" if lb.deadline else "with no deadline"
    opens = f"opens {lb.opens_at:%Y-%m-%d %H:%M} UTC, " if lb.opens_at else ""
    return (
        f"**{lb.name}** (version {lb.version}) was {action}d: its reference passed its test run. It {opens}"
        f"runs on {', '.join(lb.gpus)} {when}."
    )
