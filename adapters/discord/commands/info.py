"""About kernelrank itself: ``queue``, ``submission``, ``eval-code``, ``token`` and ``help``."""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.render import Outgoing
from adapters.discord.respond import show
from adapters.discord.services import Services
from core.contracts.messages import CommandKind

HELP_COLOUR = 0x5865F2


def register(group: app_commands.Group, svc: Services, tree: app_commands.CommandTree) -> None:
    @group.command(name="queue", description="Jobs waiting and running on each GPU, and where yours are")
    async def queue(itx: discord.Interaction) -> None:
        await svc.query(itx, CommandKind.QUEUE, public=False)

    @group.command(name="submission", description="One submission: its runs and its code")
    @app_commands.describe(id="The submission number, as in #12")
    async def submission(itx: discord.Interaction, id: app_commands.Range[int, 1]) -> None:  # noqa: A002
        await svc.query(itx, CommandKind.SUBMISSION, public=False, id=str(id))

    @group.command(name="eval-code", description="The evaluation harness's own source: nothing of it is hidden")
    async def eval_code(itx: discord.Interaction) -> None:
        await svc.query(itx, CommandKind.EVAL_CODE, public=False)

    @group.command(name="token", description="A personal token for the terminal client and the web (only you see it)")
    @app_commands.describe(action="new (the default): make one, shown once; list: yours; revoke: end one",
                           prefix="For revoke: the token's first characters, as `list` shows them")
    @app_commands.choices(action=[app_commands.Choice(name=name, value=name) for name in ("new", "list", "revoke")])
    async def token(itx: discord.Interaction, action: str = "new", prefix: str | None = None) -> None:
        await svc.query(itx, CommandKind.TOKEN, public=False, action=action, prefix=prefix)

    @group.command(name="help", description="What every command does")
    async def help_(itx: discord.Interaction) -> None:
        await show(itx, help_message(tree), private=True)


def help_message(tree: app_commands.CommandTree) -> Outgoing:
    """Every registered command with its description, read from the tree, so it never drifts from it."""
    lines = []
    for command in sorted(_walk(tree.get_commands()), key=lambda c: c.qualified_name):
        options = " ".join(f"[{p.name}]" if not p.required else p.name for p in command.parameters)
        lines.append(f"`/{command.qualified_name}{' ' + options if options else ''}`: {command.description}")
    body = "\n".join(lines)[:4000]
    embed = {"title": "kernelrank commands", "description": body, "color": HELP_COLOUR,
             "footer": {"text": "Options in brackets are optional. Errors and personal answers are shown only to you."}}
    return Outgoing(embeds=[embed], pages=[body])


def _walk(commands: list) -> list[app_commands.Command]:
    found = []
    for command in commands:
        if isinstance(command, app_commands.Group):
            found += _walk(command.commands)
        else:
            found.append(command)
    return found
