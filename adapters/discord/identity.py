"""Who is asking and where to answer: the adapter vouches for the Discord user it relays.

The actor is the Discord user id (stable, unlike names), their display name in that server, and their roles:
the names of their roles in the server where the bot knows the server's roles (the ``guilds`` intent brings
them), the role ids otherwise, plus ``SERVER_MANAGER`` for a member with the Administrator or Manage Server
permission there: the core counts them as admins, as it does members of the Leaderboard Admin role.
"""

from __future__ import annotations

import discord

from core.contracts.messages import SERVER_MANAGER, Actor, Platform, ReplyTo


def display_name(user: discord.abc.User) -> str:
    """The name people see in that server: nickname, else global display name, else user name."""
    return user.display_name or user.name


def actor_of(itx: discord.Interaction) -> Actor:
    user = itx.user
    roles: list[str] = []
    if isinstance(user, discord.Member):
        known = {role.id: role.name for role in user.roles if not role.is_default()}
        roles = [known.get(role_id, str(role_id)) for role_id in user._roles]
        permissions = itx.permissions
        if permissions.administrator or permissions.manage_guild:
            roles.append(SERVER_MANAGER)
    return Actor(platform=Platform.DISCORD, user_id=str(user.id), display_name=display_name(user), roles=roles)


def reply_to_of(itx: discord.Interaction, *, thread: int | None = None, message: int | None = None) -> ReplyTo:
    """Where replies for this interaction go: its channel, and the submission's thread and status message."""
    return ReplyTo(
        platform=Platform.DISCORD,
        channel=str(itx.channel_id or ""),
        thread=str(thread or ""),
        message=str(message or ""),
        user=str(itx.user.id),
    )
