"""Messages addressed to the bot: a mention in a channel, or a direct message to the app.

With a kernel file attached, the message is a submission (``@kernelrank ranked vectoradd H100``), answered
in that message's thread; with a file and words that name a command taking a file, the file is that command's
(``@kernelrank admin create weekly`` with the problem's archive). Without one, its words are a command, as after
the slash command (``@kernelrank show vectoradd``), answered in the thread too; private answers are ephemeral there.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp

from adapters.slack.answers import ThreadAnswer
from adapters.slack.deps import Deps
from adapters.slack.dispatch import command_id, problem, run_query, submit_file, unknown_usage_reply
from adapters.slack.grammar import is_command, parse, parse_submit, words
from adapters.slack.intake import kernel_files
from core.contracts.commands import MAX_PROBLEM_BYTES
from core.contracts.errors import UserError
from core.contracts.messages import Attachment, CommandKind, Platform, ReplyTo
from core.contracts.registry import ArgKind

MESSAGE_SUBTYPES = (None, "file_share")  # other subtypes are edits, joins, bot posts...


def register(app: AsyncApp, deps: Deps) -> None:
    @app.event("app_mention")
    async def on_mention(event: dict[str, Any], body: dict[str, Any]) -> None:
        await handle_message(deps, event, body)

    @app.event("message")
    async def on_direct_message(event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("channel_type") != "im" or event.get("subtype") not in MESSAGE_SUBTYPES or event.get("bot_id"):
            return
        await handle_message(deps, event, body)


async def handle_message(deps: Deps, event: dict[str, Any], body: dict[str, Any]) -> None:
    user, channel, ts = event.get("user", ""), event.get("channel", ""), event.get("ts", "")
    if not user or not channel:
        return
    thread = event.get("thread_ts") or ts
    where = ThreadAnswer(deps.poster, channel, thread, user)
    reply_to = ReplyTo(platform=Platform.SLACK, channel=channel, thread=thread, message=ts, user=user)
    attached = event.get("files") or []
    kernels = kernel_files(attached)
    try:
        tokens = words(event.get("text", ""))
        named = parse(event.get("text", ""), deps.config.command) if attached and is_command(tokens) else None
        if named and named.sub.spec and any(a.kind is ArgKind.FILE for a in named.sub.spec.args):
            if len(attached) != 1:  # a command with its file: `@kernelrank admin create ...`
                raise UserError("Attach exactly one file to the message that mentions me.")
            fetched = await deps.intake.fetch_any(str(attached[0].get("id")), MAX_PROBLEM_BYTES)
            await run_query(
                deps,
                named,
                await deps.identities.actor(user),
                reply_to,
                where,
                Attachment(fetched.name, fetched.content),
            )
            return
        if kernels or (attached and not is_command(tokens)):
            if len(kernels) != 1:
                raise UserError("Attach exactly one kernel file (.py or .cu) to the message that mentions me.")
            args = parse_submit(tokens[1:] if tokens and tokens[0].lower() == "submit" else tokens)
            actor = await deps.identities.actor(user)
            team = body.get("team_id") or event.get("team") or ""
            await submit_file(
                deps,
                actor=actor,
                file_id=str(kernels[0].get("id")),
                args=args,
                where=where,
                command_id_=command_id("slack-event", team, str(body.get("event_id") or ts)),
            )
            return
        invocation = parse(event.get("text", ""), deps.config.command)
    except UserError as exc:
        await where.send(
            unknown_usage_reply(deps.config.command, reply_to, str(exc))
            if not kernels and not attached
            else problem(reply_to, str(exc)),
            private=True,
        )
        return
    if invocation.sub.kind is CommandKind.SUBMIT:
        await where.send(
            problem(
                reply_to,
                "Attach your kernel file to the message that mentions me, or use "
                f"`{deps.config.command} submit` to open a form.",
            ),
            private=True,
        )
        return
    await run_query(deps, invocation, await deps.identities.actor(user), reply_to, where)
