"""``/leaderboard help``: every registered command with its description, read from the tree."""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.render import Outgoing
from adapters.discord.respond import show

HELP_COLOUR = 0x5865F2


def register(group: app_commands.Group, tree: app_commands.CommandTree) -> None:
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
    embed = {
        "title": "kernelrank commands",
        "description": body,
        "color": HELP_COLOUR,
        "footer": {"text": "Options in brackets are optional. Errors and personal answers are shown only to you."},
    }
    return Outgoing(embeds=[embed], pages=[body])


def _walk(commands: list) -> list[app_commands.Command]:
    found = []
    for command in commands:
        if isinstance(command, app_commands.Group):
            found += _walk(command.commands)
        else:
            found.append(command)
    return found
