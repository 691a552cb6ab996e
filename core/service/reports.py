"""``report SUBMISSION --reason TEXT``: anyone signed in flags a submission they think cheats, for the admins.

The report is stored (``Store.reports``) and waits in ``admin review`` with the submission's source and figures;
the answer goes to the reporter alone, and the submission's author is never told who reported it. One open report
per person and submission (a second is answered, not stored), and at most ``REPORTS_PER_DAY`` a person a day: a
report costs an admin's time. The admins' channels (``core.service.admin_news``) are told of each new report.
"""

from __future__ import annotations

from datetime import timedelta

from core.contracts import reply_parts as parts
from core.contracts.errors import NotFound, RateLimited, UserError
from core.contracts.messages import Command, Reply
from core.service.admin_news import tell_admins
from core.service.args import int_arg, reply
from core.service.deps import Deps
from core.service.people import Caller

MAX_REASON_CHARS = 500
REPORTS_PER_DAY = 10
_DAY = timedelta(days=1)


def reason_arg(cmd: Command, key: str, what: str) -> str:
    """A free-text reason on one line, at most ``MAX_REASON_CHARS`` long; empty when not given."""
    text = " ".join(str(cmd.args.get(key) or "").split())
    if len(text) > MAX_REASON_CHARS:
        raise UserError(f"Keep the {what} to {MAX_REASON_CHARS} characters (it has {len(text):,}).")
    return text


async def report(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    sub_id = int_arg(cmd, "id", "submission id")
    reason = reason_arg(cmd, "reason", "reason")
    if not reason:
        raise UserError("Say what looks wrong with --reason, in a sentence or two: the admins read it.")
    detail = await deps.db.read(deps.db.store.submission_detail, sub_id)
    if detail is None:
        raise NotFound(
            f"There is no submission #{sub_id}; `show LEADERBOARD` lists the ranked ones with their numbers."
        )
    if detail.person_id == caller.person_id:
        raise UserError(f"#{sub_id} is your own submission; submit a new one instead, or ask an admin to remove it.")
    if invalid := await deps.db.read(deps.db.store.admin.invalid_reason, sub_id):
        raise UserError(f"#{sub_id} is invalidated already ({invalid}); there is nothing left to report.")
    sent = await deps.db.read(deps.db.store.reports.count_since, caller.person_id, deps.now() - _DAY)
    if sent >= REPORTS_PER_DAY:
        raise RateLimited(
            f"You sent {sent} reports in the last day, the most kernelrank takes; send more tomorrow, or tell an admin "
            "directly.",
            int(_DAY.total_seconds()),
        )
    report_id = await deps.db.write(deps.db.store.reports.add, sub_id, caller.person_id, reason, deps.now())
    if report_id is None:
        raise UserError(f"You reported #{sub_id} already; the admins have it and will review it.")
    await tell_admins(
        deps,
        "report",
        report_id,
        f"Submission #{sub_id} reported",
        [
            parts.text(
                f"**{caller.display_name}** reported #{sub_id}: {reason}\n`admin review {sub_id}` shows the case."
            )
        ],
    )
    return reply(
        cmd,
        f"Submission #{sub_id} reported",
        [
            parts.text(
                f"Thank you: #{sub_id} waits in the admins' review with your reason. Its author is not told who "
                "reported it."
            )
        ],
        data={"submission_id": sub_id, "report_id": report_id},
    )
