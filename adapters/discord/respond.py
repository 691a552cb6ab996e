"""Answering interactions: defer at once, then show the core's reply; every refusal in one sentence, privately.

Discord wants an answer to every interaction within 3 s, so each command defers first (``defer``), publicly
or privately as the command's answer will be shown. ``answer`` then replaces the "thinking" message with the
reply; an error (or a reply meant for the asker alone) after a public defer removes the public message and
answers privately instead, so errors are never shown to the channel. ``Refusal`` is the error type for what
the adapter itself refuses; ``on_error`` is the one place every command's errors end up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import discord
from discord import app_commands

from adapters.discord.poster import message_kwargs
from adapters.discord.render import Outgoing, render_reply, render_text
from core.contracts.messages import Reply, Tone

log = logging.getLogger(__name__)

COMPONENT_PREFIX = "kernelrank:"  # custom ids of the bot's buttons and menus
STALE_COMPONENT_S = 2.0  # a live view answers at once; Discord gives up after 3 s
PUBLIC = "kernelrank_public"  # Interaction.extras key: whether the deferred answer is visible to all
UNEXPECTED = "Something went wrong in the kernelrank bot; try again, and tell an admin if it keeps happening."


class Refusal(app_commands.AppCommandError):
    """The adapter refuses a request; the message (one sentence plus what to do) is shown to the asker only."""


async def defer(itx: discord.Interaction, *, public: bool) -> None:
    """Acknowledge within Discord's 3 s; the answer follows as an edit of the "thinking" message."""
    itx.extras[PUBLIC] = public
    await itx.response.defer(ephemeral=not public, thinking=True)


async def answer(itx: discord.Interaction, reply: Reply) -> None:
    """Show a core reply as the answer to a deferred interaction."""
    await show(itx, render_reply(reply), private=reply.tone is Tone.ERROR or reply.ephemeral)


async def show(itx: discord.Interaction, out: Outgoing, *, private: bool = False) -> None:
    if not itx.response.is_done():
        await itx.response.send_message(ephemeral=True, **message_kwargs(out))
    elif private and itx.extras.get(PUBLIC):
        with contextlib.suppress(discord.NotFound):
            await itx.delete_original_response()
        await itx.followup.send(ephemeral=True, **message_kwargs(out))
    else:
        kwargs = message_kwargs(out)
        await itx.edit_original_response(
            content=kwargs.pop("content", None),
            embeds=kwargs["embeds"],
            attachments=kwargs["files"],
            view=kwargs.get("view"),
        )


async def say(itx: discord.Interaction, text: str, tone: Tone = Tone.ERROR) -> None:
    """One sentence of the adapter's own, for the asker only, whatever state the interaction is in."""
    await show(itx, render_text(text, tone), private=True)


async def answer_stale_component(itx: discord.Interaction) -> None:
    """Buttons and menus live in the bot's memory: after a restart (or their timeout) nothing answers them.

    Called for every interaction; a kernelrank component that nothing answered within 2 s gets a sentence.
    """
    data: Mapping[str, Any] = itx.data or {}
    custom_id = str(data.get("custom_id", ""))
    if itx.type is not discord.InteractionType.component or not custom_id.startswith(COMPONENT_PREFIX):
        return
    await asyncio.sleep(STALE_COMPONENT_S)
    if not itx.response.is_done():
        stale = (
            "This GPU menu no longer works (the bot restarted or it timed out); run the command again."
            if custom_id.endswith(":gpus")  # gpu_picker's menus
            else "These buttons no longer work (the bot restarted or they timed out); the whole report is "
            "attached to the message, or run the command again."
        )
        with contextlib.suppress(discord.HTTPException):
            await say(itx, stale, Tone.WARNING)


async def on_error(itx: discord.Interaction, error: app_commands.AppCommandError) -> None:
    """Every command's errors: a refusal is shown as it is; anything else is logged and apologised for."""
    if itx.type is discord.InteractionType.autocomplete:  # nothing can be shown while the user types
        log.warning("autocomplete failed: %s", error)
        return
    if isinstance(error, Refusal):
        text = str(error)
    elif isinstance(error, app_commands.CommandNotFound | app_commands.CommandSignatureMismatch):
        text = (
            "This command has changed since Discord last learned it; ask a server admin to run `/admin sync`, "
            "or try again in an hour."
        )
    elif isinstance(error, app_commands.CheckFailure):
        text = "You are not allowed to use this command here; ask a server admin."
    elif isinstance(error, app_commands.TransformerError):
        text = f"{error.value!r} is not a valid {error.type.name.lower()} here; check the option and try again."
    else:
        log.error(
            "command %s failed",
            itx.command.qualified_name if itx.command else "?",
            exc_info=getattr(error, "original", error),
        )
        text = UNEXPECTED
    try:
        await say(itx, text)
    except discord.HTTPException as exc:  # the interaction expired or was answered: nothing more to do
        log.warning("could not tell the user about an error: %s", exc)
