"""The bot's slash commands: one ``/leaderboard`` group with the names GPU MODE's users know, and ``/admin``.

The registry's commands are built from their entries (``registered``), ``submit`` included (its subgroup, one
command per mode; what a submission does then, with a file, a GPU menu and a thread, is ``submit``'s); the rest is
Discord's own: ``info`` (``help``, read from the tree) and ``admin`` (``sync``). Errors of every command end in
``respond.on_error``.
"""

from __future__ import annotations

from discord import app_commands

from adapters.discord.commands import admin, info, registered
from adapters.discord.respond import on_error
from adapters.discord.services import Services


def register_commands(tree: app_commands.CommandTree, svc: Services) -> None:
    leaderboard = app_commands.Group(name="leaderboard", description="GPU kernel leaderboards: submit, rank, compare")
    administration = admin.admin_group()
    registered.register({"leaderboard": leaderboard, "admin": administration}, svc)
    info.register(leaderboard, tree)
    admin.register(administration, tree)
    tree.add_command(leaderboard)
    tree.add_command(administration)
    tree.error(on_error)
