"""The buttons under a finished run's report: view the submission, show the leaderboard, submit again.

Each button carries what it needs in its value (set by ``adapters.slack.blocks``); answers are private,
through the action's ``response_url``, and "Submit again" opens the form pre-filled.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.respond.async_respond import AsyncRespond

from adapters.slack.answers import SlashAnswer
from adapters.slack.blocks import SHOW_BOARD, SUBMIT_AGAIN, VIEW_SUBMISSION
from adapters.slack.deps import Deps
from adapters.slack.dispatch import run_query, unknown_usage_reply
from adapters.slack.grammar import SUBCOMMANDS, Invocation, parse_submit
from adapters.slack.modal import open_submit_form
from core.contracts.errors import UserError
from core.contracts.messages import Platform, ReplyTo


def register(app: AsyncApp, deps: Deps) -> None:
    @app.action(VIEW_SUBMISSION)
    async def view_submission(ack, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        await _query(deps, body, respond, Invocation(SUBCOMMANDS["submission"], {"id": action.get("value", "")}))

    @app.action(SHOW_BOARD)
    async def show_board(ack, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        board, _, gpu = str(action.get("value", "")).partition(" ")
        args = {"leaderboard": board, **({"gpu": gpu} if gpu else {})}
        await _query(deps, body, respond, Invocation(SUBCOMMANDS["show"], args))

    @app.action(SUBMIT_AGAIN)
    async def submit_again(ack, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        user, channel, thread = _where(body)
        answer = SlashAnswer(respond, deps.poster, user)
        try:
            args = parse_submit(str(action.get("value", "")).split())
        except UserError as exc:
            await answer.send(
                unknown_usage_reply(deps.config.command, ReplyTo(Platform.SLACK, channel, user=user), str(exc)),
                private=True,
            )
            return
        await open_submit_form(
            deps,
            trigger_id=body.get("trigger_id", ""),
            actor=await deps.identities.actor(user),
            channel=channel,
            thread=thread,
            args=args,
            answer=answer,
        )


async def _query(deps: Deps, body: dict[str, Any], respond: AsyncRespond, invocation: Invocation) -> None:
    user, channel, _ = _where(body)
    reply_to = ReplyTo(platform=Platform.SLACK, channel=channel, user=user)
    await run_query(
        deps, invocation, await deps.identities.actor(user), reply_to, SlashAnswer(respond, deps.poster, user)
    )


def _where(body: dict[str, Any]) -> tuple[str, str, str]:
    """(user, channel, thread) of a block action on a message."""
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id") or ""
    thread = container.get("thread_ts") or message.get("thread_ts") or ""
    return (body.get("user") or {}).get("id", ""), channel, thread
