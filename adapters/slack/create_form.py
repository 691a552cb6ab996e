"""The leaderboard form: ``/kernelrank admin create NAME`` opens a modal with the problem's file and the GPUs.

A slash command carries no file, so the form asks for it (``file_input``: a ``reference.py``, or a ``.zip`` or
``.tar.gz`` of the problem's folder), with a multi-select of the GPU pools the workers serve (``list`` names them;
left empty, the core picks every pool the problem runs on, which only it knows once it loads the files) and the
deadline. The other settings typed after the name (``opens=``, ``description=``) travel in
``private_metadata`` with the channel. On submit the form closes and the command goes to the core like the mention
with the archive attached (``mentions``): its answers come to the channel the form was opened from. The core
checks the caller's role; a participant is refused there in one sentence.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError

from adapters.slack.answers import Answer, ThreadAnswer
from adapters.slack.deps import Deps
from adapters.slack.dispatch import problem, run_query
from adapters.slack.grammar import SUBCOMMANDS, Invocation
from adapters.slack.intake import precheck
from adapters.slack.modal import CATALOGUE_TIMEOUT_S, gpu_menu, plain, view_metadata
from core.contracts.commands import MAX_PROBLEM_BYTES, query_command
from core.contracts.errors import UserError
from core.contracts.messages import Actor, Attachment, CommandKind, Platform, ReplyTo, Tone

log = logging.getLogger(__name__)
CALLBACK_ID = "kr_create"
FILE_BLOCK, GPUS_BLOCK, DEADLINE_BLOCK = "kr_problem", "kr_create_gpus", "kr_deadline"
FILE_ACTION, GPUS_ACTION, DEADLINE_ACTION = "problem", "gpus", "deadline"


async def open_create_form(
    deps: Deps, *, trigger_id: str, actor: Actor, channel: str, invocation: Invocation, answer: Answer
) -> None:
    """Open the form for the leaderboard the command names, or answer why not (kernelrank down, no name)."""
    reply_to = ReplyTo(platform=Platform.SLACK, channel=channel, user=actor.user_id)
    if not invocation.args.get("name"):
        await answer.send(
            problem(reply_to, f"Name the new leaderboard: `{deps.config.command} admin create NAME`."), private=True
        )
        return
    listed = await deps.ask(query_command(actor, reply_to, CommandKind.LIST), timeout_s=CATALOGUE_TIMEOUT_S)
    if listed.tone is Tone.ERROR:
        await answer.send(listed, private=True)
        return
    metadata = json.dumps({"channel": channel, "args": invocation.args})
    try:
        await deps.client.views_open(
            trigger_id=trigger_id,
            view=create_view(invocation.args, [str(p) for p in listed.data.get("pools") or []], metadata),
        )
    except SlackApiError as exc:
        log.warning("views.open of the create form failed: %s", exc.response.get("error"))
        await answer.send(
            problem(reply_to, "Slack did not open the form in time; run the command again."), private=True
        )


def create_view(args: dict[str, str], pools: list[str], metadata: str) -> dict[str, Any]:
    """The form, the GPUs and deadline typed in the command pre-filled."""
    typed = {g.strip().lower() for g in args.get("gpu", "").split(",")}
    picked = [p for p in pools if p.lower() in typed]
    gpus = gpu_menu(GPUS_ACTION, pools, picked, "Choose one or more GPUs")
    deadline: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": DEADLINE_ACTION,
        "placeholder": plain("YYYY-MM-DD HH:MM (UTC)"),
    }
    if args.get("deadline"):
        deadline["initial_value"] = args["deadline"]
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": metadata,
        "title": plain("Create a leaderboard"),
        "submit": plain("Create"),
        "close": plain("Cancel"),
        "blocks": [
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": f"New leaderboard *{args['name']}*: its reference runs once on a worker before it opens.",
                },
            },
            {
                "type": "input",
                "block_id": FILE_BLOCK,
                "label": plain("Problem (reference.py, .zip or .tar.gz)"),
                "element": {"type": "file_input", "action_id": FILE_ACTION, "max_files": 1},
            },
            {
                "type": "input",
                "block_id": GPUS_BLOCK,
                "optional": True,
                "label": plain("GPUs"),
                "element": gpus,
                "hint": plain("Leave empty for every GPU its problem runs on (kernelrank knows once it loads it)."),
            },
            {
                "type": "input",
                "block_id": DEADLINE_BLOCK,
                "optional": True,
                "label": plain("Deadline"),
                "element": deadline,
                "hint": plain(
                    "Leave empty for none; at the deadline the podium is verified and the winners announced here."
                ),
            },
        ],
    }


def create_values(view: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str], str]:
    """The files, the GPUs and the deadline of a submitted form."""
    values: dict[str, dict[str, Any]] = (view.get("state") or {}).get("values") or {}
    files = (values.get(FILE_BLOCK, {}).get(FILE_ACTION) or {}).get("files") or []
    gpus = [
        o.get("value", "") for o in (values.get(GPUS_BLOCK, {}).get(GPUS_ACTION) or {}).get("selected_options") or []
    ]
    deadline = (values.get(DEADLINE_BLOCK, {}).get(DEADLINE_ACTION) or {}).get("value") or ""
    return files, [g for g in gpus if g], deadline.strip()


def register(app: AsyncApp, deps: Deps) -> None:
    @app.view(CALLBACK_ID)
    async def on_create(ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        files, gpus, deadline = create_values(view)
        try:
            if len(files) != 1:
                raise UserError("Attach one file: the problem's reference.py, or a .zip or .tar.gz of its folder.")
            precheck(files[0], MAX_PROBLEM_BYTES, kernel=False)
        except UserError as exc:
            await ack(response_action="errors", errors={FILE_BLOCK: str(exc)[:150]})
            return
        await ack()
        user = body.get("user") or {}
        metadata = view_metadata(view)
        actor = await deps.identities.actor(user.get("id", ""), user.get("name") or user.get("username") or "")
        channel = str(metadata.get("channel") or actor.user_id)
        reply_to = ReplyTo(platform=Platform.SLACK, channel=channel, user=actor.user_id)
        where = ThreadAnswer(deps.poster, channel, "", actor.user_id)
        typed = {k: v for k, v in dict(metadata.get("args") or {}).items() if k not in ("gpu", "deadline")}
        args = typed | {"gpu": ",".join(gpus)} | ({"deadline": deadline} if deadline else {})  # the form's say
        try:
            fetched = await deps.intake.fetch_any(str(files[0].get("id")), MAX_PROBLEM_BYTES)
        except UserError as exc:
            await where.send(problem(reply_to, str(exc)), private=True)
            return
        await run_query(
            deps,
            Invocation(SUBCOMMANDS["admin create"], args),
            actor,
            reply_to,
            where,
            Attachment(fetched.name, fetched.content),
        )
