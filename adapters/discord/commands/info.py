"""``/leaderboard help``: every registered command with its description, read from the tree."""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.commands.registered import PERSON_TYPED, SECOND_NAMES
from adapters.discord.render import Outgoing
from adapters.discord.respond import show

HELP_COLOUR = 0x5865F2
PAGE_CHARS = 4000  # an embed's description holds 4096


def register(group: app_commands.Group, tree: app_commands.CommandTree) -> None:
    @group.command(name="help", description="What every command does")
    async def help_(itx: discord.Interaction) -> None:
        await show(itx, help_message(tree), private=True)


def help_message(tree: app_commands.CommandTree) -> Outgoing:
    """Every registered command with its description, read from the tree, so it never drifts from it; a second
    spelling of an option (``leaderboard_name``, ``person_typed``) is left out, as its first is shown."""
    lines = []
    for command in sorted(_walk(tree.get_commands()), key=lambda c: c.qualified_name):
        shown = [p for p in command.parameters if not _second_spelling(p.name)]
        options = " ".join(f"[{p.name}]" if not p.required else p.name for p in shown)
        lines.append(f"`/{command.qualified_name}{' ' + options if options else ''}`: {command.description}")
    pages = _pages(lines)
    embed = {
        "title": "kernelrank commands",
        "description": pages[0],
        "color": HELP_COLOUR,
        "footer": {"text": "Options in brackets are optional. Errors and personal answers are shown only to you."},
    }
    return Outgoing(embeds=[embed], pages=pages)


def _second_spelling(option: str) -> bool:
    return option in SECOND_NAMES or option.endswith(PERSON_TYPED.format(""))


def _pages(lines: list[str]) -> list[str]:
    """The lines in pages that fit an embed's description, never cutting a line."""
    pages = [""]
    for line in lines:
        if pages[-1] and len(pages[-1]) + 1 + len(line) > PAGE_CHARS:
            pages.append("")
        pages[-1] = f"{pages[-1]}\n{line}" if pages[-1] else line
    return pages


def _walk(commands: list) -> list[app_commands.Command]:
    found = []
    for command in commands:
        if isinstance(command, app_commands.Group):
            found += _walk(command.commands)
        else:
            found.append(command)
    return found
