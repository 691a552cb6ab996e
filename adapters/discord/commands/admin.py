"""``/admin``: the administration group. Challenge administration (issue: challenges) adds its commands here.

It holds ``sync`` now: registering the commands with Discord is an explicit step. Guild registration is
instant and meant for development; global registration reaches every server the bot is in, is rate-limited by
Discord and takes up to an hour to show, so it happens only when an admin asks (here, or
``kernelrank discord --sync-global``), for members with Manage Server alone. The group itself is shown to everyone
in a server: the core decides who may run each command (Manage Server, the Leaderboard Admin and Leaderboard
Creator roles, admins named in the settings), and hiding the group behind Manage Server would hide it from a
Leaderboard Admin.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands

from adapters.discord.respond import Refusal, defer, say
from core.contracts.messages import Tone

log = logging.getLogger(__name__)


def admin_group() -> app_commands.Group:
    return app_commands.Group(
        name="admin",
        description="kernelrank administration",
        guild_only=True,
    )


def require_admin(itx: discord.Interaction) -> None:
    if not (itx.permissions.administrator or itx.permissions.manage_guild):
        raise Refusal("Only server admins (Manage Server) can use /admin commands.")


def register(group: app_commands.Group, tree: app_commands.CommandTree) -> None:
    @group.command(name="sync", description="Register kernelrank's commands with Discord")
    @app_commands.describe(scope="This server only (instant) or every server the bot is in (up to an hour)")
    @app_commands.choices(
        scope=[
            app_commands.Choice(name="this server", value="guild"),
            app_commands.Choice(name="every server", value="global"),
        ]
    )
    async def sync(itx: discord.Interaction, scope: str = "guild") -> None:
        require_admin(itx)
        await defer(itx, public=False)
        if scope == "global":
            synced = await tree.sync()
        else:
            guild = discord.Object(id=itx.guild_id or 0)
            tree.copy_global_to(guild=guild)
            synced = await tree.sync(guild=guild)
        log.info("%s synced %d commands (%s)", itx.user.id, len(synced), scope)
        where = "every server (it can take up to an hour to show)" if scope == "global" else "this server"
        await say(itx, f"Registered {len(synced)} commands for {where}.", Tone.SUCCESS)
