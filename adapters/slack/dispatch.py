"""Running what people asked for, whichever way they asked: queries, help, and submitting a file.

The slash command, mentions, direct messages, modal submissions and buttons all end here, so a command
behaves the same from every entry point. Commands are built with ``core.contracts.commands``; the core decides.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid

from adapters.slack.answers import Answer, ThreadAnswer
from adapters.slack.blocks import SlackMessage, mention, render
from adapters.slack.deps import Deps
from adapters.slack.grammar import Invocation, SubmitArgs, help_hint, usage
from core.contracts import reply_parts
from core.contracts.commands import query_command, submit_command
from core.contracts.errors import UserError
from core.contracts.messages import Actor, Attachment, CommandKind, Part, PartKind, Platform, Reply, ReplyTo, Tone
from core.contracts.registry import ArgKind

log = logging.getLogger(__name__)
QUEUE_TIMEOUT_S = 2.0
_IDS = uuid.UUID("6f1d4e0a-8f0b-4c55-9a43-5c1ac0de0001")  # namespace of command ids derived from Slack ids


def command_id(*slack_ids: str) -> str:
    """A command id that is the same every time Slack sends the same thing (a retried event, a modal)."""
    return uuid.uuid5(_IDS, "/".join(slack_ids)).hex


def help_reply(command: str, reply_to: ReplyTo) -> Reply:
    return Reply(
        reply_to=reply_to,
        title="kernelrank commands",
        ephemeral=True,
        parts=[
            reply_parts.code(usage(command)),
            reply_parts.text(
                f"To submit a kernel, mention me in a message with the file attached (`@kernelrank ranked "
                f"vectoradd H100`), send it to me directly, or use `{command} submit` to open a form."
            ),
        ],
    )


def problem(reply_to: ReplyTo, message: str) -> Reply:
    return reply_parts.error_reply(reply_to, message)


async def run_query(
    deps: Deps,
    invocation: Invocation,
    actor: Actor,
    reply_to: ReplyTo,
    answer: Answer,
    attachment: Attachment | None = None,
) -> None:
    """Ask the core and answer; ``help`` is answered here, and a command that needs a file attached without one."""
    if invocation.sub.kind is None:
        await answer.send(help_reply(deps.config.command, reply_to), private=True)
        return
    spec = invocation.sub.spec
    if attachment is None and spec and any(a.kind is ArgKind.FILE and a.required for a in spec.args):
        await answer.send(
            problem(
                reply_to,
                f"`{spec.name}` needs a file: attach it to a message that mentions me, "
                f"like `@kernelrank {spec.name} ...` with the file.",
            ),
            private=True,
        )
        return
    command = query_command(actor, reply_to, invocation.sub.kind, **invocation.args)
    command.attachment = attachment
    reply = await deps.ask(command)
    await answer.send(reply, private=invocation.sub.private)


async def submit_file(
    deps: Deps, *, actor: Actor, file_id: str, args: SubmitArgs, where: ThreadAnswer, command_id_: str
) -> None:
    """Fetch the file, send the submission, and turn a first "submitting" message into its acceptance.

    The first message goes in ``where.thread`` (the message that carried the file), or, for the form,
    which has no message of its own, at the top of ``where.channel``, where it starts the submission's
    thread. Posting it before the core queues the runs keeps the thread in order: acceptance, progress,
    report. A file that will not do, or a submission the core refuses, gets one private sentence.
    """
    reply_to = ReplyTo(platform=Platform.SLACK, channel=where.channel, thread=where.thread, user=actor.user_id)
    try:
        kernel = await deps.intake.fetch(file_id)
    except UserError as exc:
        await where.send(problem(reply_to, str(exc)), private=True)
        return
    text = f"{mention(actor.user_id)} is submitting `{kernel.name}`…"
    first = await where.post(SlackMessage(text, [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]))
    if first is None:
        await where.send(
            problem(
                reply_to,
                "I could not post in this conversation; invite me with /invite, or "
                "mention me with the file in a channel I am in.",
            ),
            private=True,
        )
        return
    thread = where.thread if where.thread and first.channel == where.channel else first.ts
    where = ThreadAnswer(deps.poster, first.channel, thread, actor.user_id)
    reply_to = dataclasses.replace(reply_to, channel=first.channel, thread=thread, message=first.ts)
    command = submit_command(actor, reply_to, kernel.name, kernel.content, **args)
    command.id = command_id_
    accepted = await deps.ask(command)
    if accepted.tone is Tone.ERROR:
        await deps.poster.delete(first.channel, first.ts)
        await where.send(accepted, private=True)
        return
    accepted.parts = [
        Part(kind=PartKind.MENTION, text=actor.user_id),
        *accepted.parts,
        *await _queue_parts(deps, actor, reply_to),
    ]
    if not await deps.poster.update(first.channel, first.ts, render(accepted, buttons=False)):
        await where.send(accepted)


async def _queue_parts(deps: Deps, actor: Actor, reply_to: ReplyTo) -> list[Part]:
    """Where the submission stands in the queue, when the core answers ``queue`` (best effort, quick)."""
    reply = await deps.ask(query_command(actor, reply_to, CommandKind.QUEUE), timeout_s=QUEUE_TIMEOUT_S)
    if reply.tone is Tone.ERROR:
        log.debug("no queue position: %s", reply.parts[0].text if reply.parts else "")
        return []
    return [p for p in reply.parts if p.kind in (PartKind.STATUS, PartKind.TEXT, PartKind.TABLE)]


def unknown_usage_reply(command: str, reply_to: ReplyTo, message: str) -> Reply:
    """An unknown subcommand or a missing argument: the sentence, then the full usage."""
    return Reply(
        reply_to=reply_to,
        tone=Tone.ERROR,
        ephemeral=True,
        title="kernelrank commands",
        parts=[
            reply_parts.status(
                message if help_hint(command) in message else f"{message} {help_hint(command)}", Tone.ERROR
            ),
            reply_parts.code(usage(command)),
        ],
    )
