"""Reading leaderboards: ``list``, ``show``, ``show-personal`` (``mine``), ``history``, ``task``
(``reference-code``) and ``template``."""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.identity import display_name
from adapters.discord.options import gpu_names, leaderboard_names
from adapters.discord.services import Services
from core.contracts.commands import TEMPLATE_LANGUAGES
from core.contracts.messages import CommandKind

LEADERBOARD = "The leaderboard (start typing to see them)"
GPU = "Only this GPU (default: every GPU the leaderboard offers)"


def register(group: app_commands.Group, svc: Services) -> None:
    boards, gpus = leaderboard_names(svc.catalogue), gpu_names(svc.catalogue)

    @group.command(name="list", description="The leaderboards, their GPUs and deadlines")
    async def list_(itx: discord.Interaction) -> None:
        await svc.query(itx, CommandKind.LIST, public=True)

    @group.command(name="show", description="A leaderboard's ranking on each GPU")
    @app_commands.describe(leaderboard=LEADERBOARD, gpu=GPU)
    @app_commands.autocomplete(leaderboard=boards, gpu=gpus)
    async def show(itx: discord.Interaction, leaderboard: str, gpu: str | None = None) -> None:
        await svc.query(itx, CommandKind.SHOW, public=True, leaderboard=leaderboard, gpu=gpu)

    @app_commands.describe(leaderboard=LEADERBOARD, gpu=GPU)
    @app_commands.autocomplete(leaderboard=boards, gpu=gpus)
    async def mine(itx: discord.Interaction, leaderboard: str, gpu: str | None = None) -> None:
        await svc.query(itx, CommandKind.MINE, public=False, leaderboard=leaderboard, gpu=gpu)

    for name in ("show-personal", "mine"):
        group.add_command(app_commands.Command(name=name, callback=mine,
                                               description="Your own submissions to a leaderboard (only you see it)"))

    @group.command(name="history", description="Best score over time, as a table and a chart")
    @app_commands.describe(leaderboard=LEADERBOARD, user="Whose history (default: yours)", gpu=GPU)
    @app_commands.autocomplete(leaderboard=boards, gpu=gpus)
    async def history(itx: discord.Interaction, leaderboard: str, user: discord.User | None = None,
                      gpu: str | None = None) -> None:
        others = {"user": str(user.id), "user_name": display_name(user)} if user and user.id != itx.user.id else {}
        await svc.query(itx, CommandKind.HISTORY, public=True, leaderboard=leaderboard, gpu=gpu, **others)

    @app_commands.describe(leaderboard=LEADERBOARD)
    @app_commands.autocomplete(leaderboard=boards)
    async def task(itx: discord.Interaction, leaderboard: str) -> None:
        await svc.query(itx, CommandKind.TASK, public=True, leaderboard=leaderboard)

    for name in ("task", "reference-code"):
        group.add_command(app_commands.Command(name=name, callback=task,
                                               description="The problem: its description and reference files"))

    @group.command(name="template", description="A starter file for a leaderboard (only you see it)")
    @app_commands.describe(leaderboard=LEADERBOARD, lang="The language of the template")
    @app_commands.autocomplete(leaderboard=boards)
    @app_commands.choices(lang=[app_commands.Choice(name=lang, value=lang) for lang in TEMPLATE_LANGUAGES])
    async def template(itx: discord.Interaction, leaderboard: str, lang: str | None = None) -> None:
        await svc.query(itx, CommandKind.TEMPLATE, public=False, leaderboard=leaderboard, lang=lang)
