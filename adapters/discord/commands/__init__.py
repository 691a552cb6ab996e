"""The bot's slash commands: one ``/leaderboard`` group with the names GPU MODE's users know, and ``/admin``.

One module per feature, each adding its commands to the group it is given: ``submit`` (the ``submit``
subgroup), ``boards`` (reading leaderboards), ``info`` (queue, submission, eval-code, token, help) and
``admin``. Errors of every command end in ``respond.on_error``.
"""

from __future__ import annotations

from discord import app_commands

from adapters.discord.commands import admin, boards, info, submit
from adapters.discord.respond import on_error
from adapters.discord.services import Services


def register_commands(tree: app_commands.CommandTree, svc: Services) -> None:
    leaderboard = app_commands.Group(name="leaderboard", description="GPU kernel leaderboards: submit, rank, compare")
    submit.register(leaderboard, svc)
    boards.register(leaderboard, svc)
    info.register(leaderboard, svc, tree)
    administration = admin.admin_group()
    admin.register(administration, tree)
    tree.add_command(leaderboard)
    tree.add_command(administration)
    tree.on_error = on_error
