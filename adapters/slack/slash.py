"""The slash command (``/kernelrank`` by default): one noun, one subcommand per action.

It acknowledges at once (Slack allows 3 s), then works: ``submit`` and ``admin create`` open their forms,
``help`` and unknown subcommands print the usage, and every other subcommand asks the core and answers through
the command's ``response_url``, visible to the asker alone.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.respond.async_respond import AsyncRespond

from adapters.slack.answers import SlashAnswer
from adapters.slack.create_form import open_create_form
from adapters.slack.deps import Deps
from adapters.slack.dispatch import run_query, unknown_usage_reply
from adapters.slack.grammar import parse, parse_submit
from adapters.slack.modal import open_submit_form
from core.contracts.errors import UserError
from core.contracts.messages import CommandKind, Platform, ReplyTo


def register(app: AsyncApp, deps: Deps) -> None:
    @app.command(deps.config.command)
    async def on_command(ack, command: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        user, channel = command.get("user_id", ""), command.get("channel_id", "")
        reply_to = ReplyTo(platform=Platform.SLACK, channel=channel, user=user)
        answer = SlashAnswer(respond, deps.poster, user)
        try:
            invocation = parse(command.get("text", ""), deps.config.command)
        except UserError as exc:
            await answer.send(unknown_usage_reply(deps.config.command, reply_to, str(exc)), private=True)
            return
        actor = await deps.identities.actor(user, command.get("user_name", ""))
        if invocation.sub.kind is CommandKind.SUBMIT:
            try:
                args = parse_submit(invocation.rest)
            except UserError as exc:
                await answer.send(unknown_usage_reply(deps.config.command, reply_to, str(exc)), private=True)
                return
            await open_submit_form(
                deps,
                trigger_id=command.get("trigger_id", ""),
                actor=actor,
                channel=channel,
                thread="",
                args=args,
                answer=answer,
            )
            return
        if invocation.sub.kind is CommandKind.BOARD_CREATE:  # no file in a slash command: a form asks for it
            await open_create_form(
                deps,
                trigger_id=command.get("trigger_id", ""),
                actor=actor,
                channel=channel,
                invocation=invocation,
                answer=answer,
            )
            return
        await run_query(deps, invocation, actor, reply_to, answer)
