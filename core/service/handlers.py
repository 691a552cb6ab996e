"""Command handlers, one per ``CommandKind``, and ``dispatch``, which runs the right one for a command.

``dispatch`` bounds what the command carries, finds out who sent it (``core.service.people``: a chat identity the
adapter vouched for, or a personal token), refuses a command its registry entry keeps for admins (or admins and
leaderboard creators), then runs the handler: a plain function of the command, its caller and the dependencies.
Bad input raises ``UserError``, shown to the user as it is, with its code in ``data["error"]``. The table at the
bottom maps every kind to its handler; ``tests/core/test_handlers.py`` holds it to the registry
(``core.contracts.registry``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from core.contracts import reply_parts
from core.contracts.commands import check_lengths
from core.contracts.errors import Busy, Forbidden, NotSignedIn, RateLimited, UserError
from core.contracts.messages import Command, CommandKind, Reply
from core.contracts.registry import BY_KIND, Access
from core.contracts.specs import check_arguments
from core.service import admin, backups, challenges, linking, manage, profiles, queries, reports, review, task_queries
from core.service.deps import Deps
from core.service.people import VISITOR, Caller
from core.service.submit import submit
from core.service.tokens import issue_token, token

Handler = Callable[[Command, Caller, Deps], Awaitable[Reply]]


async def dispatch(cmd: Command, deps: Deps) -> Reply:
    """Answer one command: who sent it, then its handler; a ``UserError`` becomes an error reply with its code."""
    try:
        handler = HANDLERS.get(cmd.kind)
        if handler is None:
            raise UserError(f"kernelrank does not know the command {cmd.kind.value!r}.")
        check_lengths(cmd)
        spec = BY_KIND[cmd.kind]
        check_arguments(spec, cmd.args)
        caller = await _caller(cmd, spec.access, deps)
        if spec.access is Access.ADMIN and not caller.admin:
            raise Forbidden(f"Only admins can use `{spec.name}`; ask one of them.")
        if spec.access is Access.CREATOR and not (caller.admin or caller.creator):
            raise Forbidden(
                f"Only admins and leaderboard creators can use `{spec.name}`; ask an admin for the creator role."
            )
        return await handler(cmd, caller, deps)
    except UserError as exc:
        reply = reply_parts.error_reply(cmd.reply_to, str(exc), cmd.id)
        reply.data = {"error": exc.code}
        if isinstance(exc, RateLimited | Busy):
            reply.data["retry_after_s"] = exc.retry_after_s
        return reply


async def _caller(cmd: Command, access: Access, deps: Deps) -> Caller:
    """Who sent ``cmd``; a visitor for a public command sent without a token (a bad token is still refused)."""
    try:
        return await deps.people.caller(cmd, deps.now())
    except NotSignedIn:
        if access is Access.PUBLIC and not cmd.credential_sha256:
            return VISITOR
        raise


HANDLERS: dict[CommandKind, Handler] = {
    CommandKind.SUBMIT: submit,
    CommandKind.LIST: queries.list_leaderboards,
    CommandKind.SHOW: queries.show,
    CommandKind.MINE: queries.mine,
    CommandKind.HISTORY: queries.history,
    CommandKind.TASK: task_queries.task,
    CommandKind.TEMPLATE: task_queries.template,
    CommandKind.SUBMISSION: queries.submission,
    CommandKind.STATS: queries.stats,
    CommandKind.QUEUE: queries.queue,
    CommandKind.EVAL_CODE: task_queries.eval_code,
    CommandKind.TOKEN: token,
    CommandKind.ISSUE_TOKEN: issue_token,
    CommandKind.BOARD_CREATE: manage.create,
    CommandKind.BOARD_UPDATE: manage.update,
    CommandKind.BOARD_CLOSE: manage.close,
    CommandKind.BOARD_REOPEN: manage.reopen,
    CommandKind.BOARD_DELETE: manage.delete,
    CommandKind.CHALLENGE_CREATE: challenges.create,
    CommandKind.CHALLENGE_UPDATE: challenges.update,
    CommandKind.CHALLENGE_CANCEL: challenges.cancel,
    CommandKind.CHALLENGES: challenges.listed,
    CommandKind.CHALLENGE: challenges.show,
    CommandKind.TEAM_ADD: challenges.team_add,
    CommandKind.ROLE: admin.role,
    CommandKind.BAN: admin.ban,
    CommandKind.UNBAN: admin.unban,
    CommandKind.INVALIDATE: admin.invalidate,
    CommandKind.LIMIT: admin.limit,
    CommandKind.AUDIT: admin.audit,
    CommandKind.PERSON: profiles.person,
    CommandKind.LINK: linking.link,
    CommandKind.UNLINK: linking.unlink,
    CommandKind.ADMIN_LINK: linking.admin_link,
    CommandKind.ADMIN_UNLINK: linking.admin_unlink,
    CommandKind.REPORT: reports.report,
    CommandKind.REVIEW: review.review,
    CommandKind.BACKUP: backups.backup,
}
