"""The admins' tools from chat: ``admin role``, ``ban``, ``unban``, ``invalidate``, ``limit`` and ``audit``
(``admin review``, which invalidates through ``invalidate_submission``, is in ``core.service.review``).

Every change is written to the audit log with who made it and why; ``admin audit`` reads it back.
"""

from __future__ import annotations

import re
from datetime import timedelta

from core.contracts import reply_parts
from core.contracts.errors import NotFound, UserError
from core.contracts.messages import Command, CommandKind, Reply
from core.service.args import int_arg, moment_arg, other_person, reply
from core.service.deps import Deps
from core.service.people import Caller


async def role(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    action, name = cmd.args.get("action"), cmd.args.get("role")
    if action not in ("grant", "revoke") or name not in ("admin", "creator"):
        raise UserError("Use `admin role grant|revoke PERSON admin|creator`.")
    person, who = await _person(cmd, deps)
    if action == "grant":
        await deps.db.write(deps.db.store.admin.grant, person, name, deps.now())
        words = f"{who} is now {'an admin' if name == 'admin' else 'a leaderboard creator'}."
    elif await deps.db.write(deps.db.store.admin.revoke, person, name):
        words = f"{who} is no longer {'an admin' if name == 'admin' else 'a leaderboard creator'}."
    else:
        raise UserError(
            f"{who} does not hold the {name} role granted from chat (configured admins and Discord "
            "server roles are changed where they are set)."
        )
    deps.people.roles_changed()
    await _audit(deps, caller, f"role {action}", {"person": _named(person, who), "role": name})
    return reply(cmd, "Roles", [reply_parts.text(words)], data={"person_id": person, "role": name, "action": action})


async def ban(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    person, who = await _person(cmd, deps)
    reason = str(cmd.args.get("reason") or "no reason given")
    await deps.db.write(deps.db.store.admin.ban, person, reason, deps.now())
    await _audit(deps, caller, "ban", {"person": _named(person, who), "reason": reason})
    return reply(
        cmd, "Banned", [reply_parts.text(f"{who} can no longer submit ({reason}).")], data={"person_id": person}
    )


async def unban(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    person, who = await _person(cmd, deps)
    if not await deps.db.write(deps.db.store.admin.unban, person):
        raise UserError(f"{who} is not banned.")
    await _audit(deps, caller, "unban", {"person": _named(person, who), "reason": cmd.args.get("reason") or ""})
    return reply(cmd, "Unbanned", [reply_parts.text(f"{who} can submit again.")], data={"person_id": person})


async def invalidate(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    sub_id = int_arg(cmd, "id", "submission id")
    reason = str(cmd.args.get("reason") or "").strip()
    if not reason:
        raise UserError("Say why with --reason: it is shown with the submission and kept in the audit log.")
    await invalidate_submission(deps, caller, sub_id, reason)
    return reply(
        cmd,
        f"Submission #{sub_id} invalidated",
        [reply_parts.text(f"#{sub_id} is out of every ranking ({reason}); it stays in history, marked.")],
        data={"submission_id": sub_id},
    )


async def invalidate_submission(
    deps: Deps, caller: Caller, sub_id: int, reason: str, action: str = "invalidate"
) -> int:
    """Take the submission out of every ranking and close its open case as a cheat (``admin invalidate`` and
    ``admin review --decide cheat`` both end here), written to the audit log as ``action``; the reports it closed."""
    if already := await deps.db.read(deps.db.store.admin.invalid_reason, sub_id):
        raise UserError(f"#{sub_id} is invalidated already ({already}); nothing changed.")
    if not await deps.db.write(deps.db.store.admin.invalidate, sub_id, reason):
        raise NotFound(f"There is no submission #{sub_id}.")
    closed = await deps.db.write(deps.db.store.reports.decide, sub_id, "cheat", reason, caller.signature, deps.now())
    await _audit(deps, caller, action, {"submission": sub_id, "reason": reason, "reports_closed": closed})
    return closed


async def limit(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    """A person's own limit, or a leaderboard's for everyone together when ``person`` names a leaderboard."""
    rate = re.fullmatch(r"\s*(\d+)\s*(?:/\s*min)?\s*", str(cmd.args.get("rate") or ""))
    if rate is None or not 1 <= int(rate.group(1)) <= 10_000:
        raise UserError("Give the limit as submissions per minute, like 5/min.")
    per_minute = int(rate.group(1))
    board = await deps.boards.get(str(cmd.args.get("person") or "").strip())
    if board is not None:
        name = board.leaderboard.name
        await deps.db.write(deps.db.store.admin.set_board_limit, name, per_minute)
        await read_limits(deps)
        await _audit(deps, caller, "limit", {"leaderboard": name, "per_minute": per_minute})
        return reply(
            cmd,
            "Rate limit",
            [
                reply_parts.text(
                    f"{name} takes {reply_parts.counted(per_minute, 'submission')} a minute per GPU, "
                    "everyone's together."
                )
            ],
            data={"leaderboard": name, "per_minute": per_minute},
        )
    person, who = await _person(cmd, deps)
    await deps.db.write(deps.db.store.admin.set_limit, person, per_minute)
    await read_limits(deps)
    await _audit(deps, caller, "limit", {"person": _named(person, who), "per_minute": per_minute})
    return reply(
        cmd,
        "Rate limit",
        [reply_parts.text(f"{who} may submit {reply_parts.counted(per_minute, 'time')} a minute per GPU.")],
        data={"person_id": person, "per_minute": per_minute},
    )


async def read_limits(deps: Deps) -> None:
    """The people's and leaderboards' own limits, from the store into the limiter."""
    deps.limiter.own = await deps.db.read(deps.db.store.admin.limits)
    boards = await deps.db.read(deps.db.store.admin.board_limits)
    deps.limiter.boards = {name.lower(): per_minute for name, per_minute in boards.items()}


async def audit(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    since = moment_arg(cmd, "since") or deps.now() - timedelta(days=7)
    rows = await deps.db.read(deps.db.store.admin.audit, since)
    if not rows:
        return reply(
            cmd, "Audit log", [reply_parts.text(f"Nothing since {since:%Y-%m-%d %H:%M} UTC.")], data={"rows": []}
        )
    return reply(
        cmd,
        "Audit log",
        [
            reply_parts.table(
                ["when", "who", "what", "detail"],
                [
                    [f"{at:%Y-%m-%d %H:%M}", actor, action, ", ".join(f"{k}={v}" for k, v in detail.items())[:200]]
                    for at, actor, action, detail in rows
                ],
            )
        ],
        data={
            "rows": [
                {"at": at.isoformat(), "who": actor, "what": action, "detail": detail}
                for at, actor, action, detail in rows
            ]
        },
    )


async def _person(cmd: Command, deps: Deps) -> tuple[int, str]:
    who = str(cmd.args.get("person") or "").strip()
    if not who:
        board = " or the leaderboard" if cmd.kind is CommandKind.LIMIT else ""  # a limit may be a leaderboard's
        raise UserError(f"Name the person (discord:ID, slack:ID or their name){board}.")
    person = await other_person(cmd, deps, who)
    known = await deps.db.read(deps.db.store.person_summary, person, 0)
    return person, str(cmd.args.get("person_name") or (known and known.display_name) or who)


def _named(person: int, who: str) -> str:
    """A person as the audit log names them: by the name the admin gave and their number, like the actor."""
    return f"{who} (person {person})"


async def _audit(deps: Deps, caller: Caller, action: str, detail: dict) -> None:
    await deps.db.write(deps.db.store.audit, caller.signature, action, detail)
