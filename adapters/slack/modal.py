"""The submission form: ``/kernelrank submit`` opens a modal with a file input and the choices.

Slash commands carry no files, so the form asks for one (``file_input``), with the ``submit`` entry's other
arguments pre-filled from the command's words: the leaderboard and the GPUs as menus of what there is, an argument
with choices (the mode) as a menu of them with their help, any other as a text field. Picking a leaderboard narrows
the GPU choices (a block action and ``views.update``). A missing or unusable file is shown under the file field and
the form stays open.
On submit the form closes and the submission continues in the channel it was opened from (kept in
``private_metadata``, since a ``view_submission`` has no ``response_url``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError

from adapters.slack.answers import Answer, ThreadAnswer
from adapters.slack.deps import Deps
from adapters.slack.dispatch import command_id, problem, submit_file
from adapters.slack.grammar import SubmitArgs
from adapters.slack.intake import precheck
from core.contracts.commands import query_command
from core.contracts.errors import UserError
from core.contracts.messages import Actor, CommandKind, Platform, ReplyTo, Tone
from core.contracts.registry import BY_KIND, Arg, ArgKind

log = logging.getLogger(__name__)
CALLBACK_ID = "kr_submit"
# An argument's field is block ``kr_<name>``, action ``<name>`` (``kr_mode``, ``mode``); but for these:
FILE_BLOCK, BOARD_BLOCK, GPUS_BLOCK = "kr_file", "kr_leaderboard", "kr_gpus"
FILE_ACTION, BOARD_ACTION, GPUS_ACTION = "file", "kr_pick_leaderboard", "gpus"
MAX_OPTIONS = 100  # Slack's limit per select menu
CATALOGUE_TIMEOUT_S = 2.0  # the trigger id expires 3 s after the command


async def open_submit_form(
    deps: Deps, *, trigger_id: str, actor: Actor, channel: str, thread: str, args: SubmitArgs, answer: Answer
) -> None:
    """Open the form, or answer why not (kernelrank down, no leaderboards)."""
    reply_to = ReplyTo(platform=Platform.SLACK, channel=channel, thread=thread, user=actor.user_id)
    listed = await deps.ask(query_command(actor, reply_to, CommandKind.LIST), timeout_s=CATALOGUE_TIMEOUT_S)
    if listed.tone is Tone.ERROR:
        await answer.send(listed, private=True)
        return
    boards = listed.data.get("leaderboards") or []
    if not boards:
        await answer.send(
            problem(reply_to, "There are no leaderboards yet: an admin loads problems first."), private=True
        )
        return
    metadata = json.dumps({"channel": channel, "thread": thread})
    try:
        await deps.client.views_open(trigger_id=trigger_id, view=submit_view(boards, args, metadata))
    except SlackApiError as exc:
        log.warning("views.open failed: %s", exc.response.get("error"))
        await answer.send(
            problem(reply_to, "Slack did not open the form in time; run the command again."), private=True
        )


def submit_view(boards: list[dict[str, Any]], chosen: SubmitArgs, metadata: str) -> dict[str, Any]:
    """The form's view, with ``chosen`` pre-selected where it names a real leaderboard, GPU or choice."""
    boards = boards[:MAX_OPTIONS]
    by_name = {b["name"].lower(): b for b in boards}
    wanted = str(chosen.get("leaderboard") or "")
    board = by_name.get(wanted.lower()) if wanted else None
    if board is None and len(boards) == 1:
        board = boards[0]
    gpus = list(board["gpus"]) if board else list(dict.fromkeys(g for b in boards for g in b["gpus"]))
    asked = {g.lower() for g in chosen.get("gpu") or []}
    picked = [g for g in gpus if g.lower() in asked] or (gpus if len(gpus) == 1 else [])
    board_select: dict[str, Any] = {
        "type": "static_select",
        "action_id": BOARD_ACTION,
        "placeholder": plain("Choose a leaderboard"),
        "options": [option(b["name"]) for b in boards],
    }
    if board:
        board_select["initial_option"] = option(board["name"])
    fields = {
        "leaderboard": {
            "type": "input",
            "block_id": BOARD_BLOCK,
            "optional": True,
            "dispatch_action": True,
            "label": plain("Leaderboard"),
            "element": board_select,
            "hint": plain("Leave empty to use the file's #!POPCORN leaderboard line."),
        },
        # The block id names the leaderboard, so GPUs picked for another one are not carried over.
        "gpu": {
            "type": "input",
            "block_id": f"{GPUS_BLOCK}.{board['name'] if board else ''}"[:255],
            "optional": True,
            "label": plain("GPUs"),
            "element": gpu_menu(GPUS_ACTION, gpus, picked, "Choose GPUs"),
        },
    }
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": metadata,
        "title": plain("Submit a kernel"),
        "submit": plain("Submit"),
        "close": plain("Cancel"),
        "blocks": [
            *(fields.get(arg.name) or _field(arg, chosen.get(arg.name)) for arg in BY_KIND[CommandKind.SUBMIT].args),
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": "UTF-8 source, a .py file defining "
                        "`custom_kernel` or a .cu file. Results arrive in a thread here.",
                    }
                ],
            },
        ],
    }


def _field(arg: Arg, chosen: Any) -> dict[str, Any]:
    """The block of one argument: the file's input, a menu of its choices, or a line of text."""
    if arg.kind is ArgKind.FILE:
        return {
            "type": "input",
            "block_id": FILE_BLOCK,
            "label": plain("Kernel file (.py or .cu)"),
            "element": {"type": "file_input", "action_id": FILE_ACTION, "filetypes": ["py", "cu"], "max_files": 1},
        }
    block: dict[str, Any] = {"type": "input", "block_id": f"kr_{arg.name}", "label": plain(arg.name.capitalize())}
    if arg.choices:
        first = chosen if chosen in arg.choices else arg.default
        block["element"] = {
            "type": "static_select",
            "action_id": arg.name,
            "options": [option(c, arg.choice_help.get(c, "")) for c in arg.choices],
            **({"initial_option": option(first, arg.choice_help.get(first, ""))} if first else {}),
        }
        block["optional"] = not first
        return block
    block["element"] = {
        "type": "plain_text_input",
        "action_id": arg.name,
        **({"initial_value": chosen} if chosen else {}),
    }
    return {**block, "optional": True, "hint": plain(arg.help[:150])}


def form_values(view: dict[str, Any]) -> tuple[list[dict[str, Any]], SubmitArgs]:
    """The files and the arguments of a submitted form, read from ``view.state.values``."""
    values: dict[str, dict[str, Any]] = (view.get("state") or {}).get("values") or {}
    files = (values.get(FILE_BLOCK, {}).get(FILE_ACTION) or {}).get("files") or []
    board = ((values.get(BOARD_BLOCK, {}).get(BOARD_ACTION) or {}).get("selected_option") or {}).get("value", "")
    gpus: list[str] = []
    for block_id, actions in values.items():
        if block_id.split(".")[0] == GPUS_BLOCK:
            gpus += [o.get("value", "") for o in (actions.get(GPUS_ACTION) or {}).get("selected_options") or []]
    found: SubmitArgs = {"leaderboard": board, "gpu": [g for g in gpus if g]}
    for arg in BY_KIND[CommandKind.SUBMIT].args:
        if arg.name not in found and arg.kind is not ArgKind.FILE:
            state = values.get(f"kr_{arg.name}", {}).get(arg.name) or {}
            found[arg.name] = (state.get("selected_option") or {}).get("value") or state.get("value") or ""
    return files, found


def register(app: AsyncApp, deps: Deps) -> None:
    @app.view(CALLBACK_ID)
    async def on_submit(ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        files, args = form_values(view)
        if len(files) != 1:
            await ack(response_action="errors", errors={FILE_BLOCK: "Attach one kernel file: a .py or .cu file."})
            return
        try:
            precheck(files[0], deps.config.max_source_bytes)
        except UserError as exc:
            await ack(response_action="errors", errors={FILE_BLOCK: str(exc)[:150]})
            return
        await ack()
        user = body.get("user") or {}
        metadata = view_metadata(view)
        actor = await deps.identities.actor(user.get("id", ""), user.get("name") or user.get("username") or "")
        where = ThreadAnswer(
            deps.poster, str(metadata.get("channel") or actor.user_id), str(metadata.get("thread") or ""), actor.user_id
        )
        team = (body.get("team") or {}).get("id") or user.get("team_id") or ""
        await submit_file(
            deps,
            actor=actor,
            file_id=str(files[0].get("id")),
            args=args,
            where=where,
            command_id_=command_id("slack-view", team, str(view.get("id"))),
        )

    @app.action(BOARD_ACTION)
    async def on_pick_board(ack, body: dict[str, Any]) -> None:
        await ack()
        view = body.get("view") or {}
        if view.get("callback_id") != CALLBACK_ID:
            return
        _, args = form_values(view)
        user = (body.get("user") or {}).get("id", "")
        actor = await deps.identities.actor(user)
        listed = await deps.ask(
            query_command(actor, ReplyTo(platform=Platform.SLACK, user=user), CommandKind.LIST),
            timeout_s=CATALOGUE_TIMEOUT_S,
        )
        boards = listed.data.get("leaderboards") or []
        if not boards:
            return
        try:
            await deps.client.views_update(
                view_id=view.get("id"),
                hash=view.get("hash"),
                view=submit_view(boards, args, view.get("private_metadata") or "{}"),
            )
        except SlackApiError as exc:  # hash_conflict: the person changed the form meanwhile; keep theirs
            log.info("views.update of the submit form skipped: %s", exc.response.get("error"))


def view_metadata(view: dict[str, Any]) -> dict[str, Any]:
    try:
        found = json.loads(view.get("private_metadata") or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def option(value: str, description: str = "") -> dict[str, Any]:
    shown = {"description": plain(description[:75])} if description else {}
    return {"text": plain(value[:75]), "value": value[:150], **shown}


def gpu_menu(action_id: str, gpus: list[str], picked: list[str], placeholder: str) -> dict[str, Any]:
    """A multi-select of GPU pools (the submit form's and the create form's), ``picked`` chosen already."""
    menu: dict[str, Any] = {
        "type": "multi_static_select",
        "action_id": action_id,
        "placeholder": plain(placeholder),
        "options": [option(g) for g in gpus[:MAX_OPTIONS]],
    }
    if picked:
        menu["initial_options"] = [option(g) for g in picked]
    return menu


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}
