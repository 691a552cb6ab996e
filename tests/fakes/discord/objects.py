"""Discord API objects as Discord sends them (v10): users, members, roles, guilds, channels, messages, threads.

Every builder fills every field Discord documents for the object (with its usual value when there is nothing to
say), so discord.py parses them as it parses the real ones. Snowflakes are strings on the wire.
"""

from __future__ import annotations

import itertools
import threading
import time
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1420070400000
APPLICATION_ID = "1300000000000000001"
BOT_ID = APPLICATION_ID  # a bot's user id is its application's id
GUILD_ID = "1300000000000000100"
OWNER_ID = "1300000000000000200"
KERNELS_CHANNEL = "1300000000000000300"
ANNOUNCE_CHANNEL = "1300000000000000301"
ADMIN_ROLE = "1300000000000000400"
COMPETITOR_ROLE = "1300000000000000401"

# Permission bits (Discord's documented values).
ADMINISTRATOR = 1 << 3
MANAGE_GUILD = 1 << 5
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
READ_MESSAGE_HISTORY = 1 << 16
USE_APPLICATION_COMMANDS = 1 << 31
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
MEMBER = (
    VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | USE_APPLICATION_COMMANDS
    | CREATE_PUBLIC_THREADS
    | SEND_MESSAGES_IN_THREADS
)
BOT_PERMISSIONS = MEMBER

# Channel types.
GUILD_TEXT, DM, GUILD_ANNOUNCEMENT, PUBLIC_THREAD, PRIVATE_THREAD = 0, 1, 5, 11, 12

_lock = threading.Lock()
_sequence = itertools.count()


def snowflake() -> str:
    """A fresh id, time-ordered like Discord's."""
    with _lock:
        return str(((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (next(_sequence) & 0x3FFFFF))


def timestamp() -> str:
    return datetime.now(UTC).isoformat()


def user(user_id: str, username: str, global_name: str | None = None, bot: bool = False) -> dict[str, Any]:
    data = {
        "id": user_id,
        "username": username,
        "discriminator": "0",
        "global_name": global_name,
        "avatar": None,
        "public_flags": 0,
        "flags": 0,
        "banner": None,
        "accent_color": None,
        "avatar_decoration_data": None,
        "collectibles": None,
        "primary_guild": None,
    }
    if bot:
        data["bot"] = True
    return data


BOT_USER = user(BOT_ID, "kernelrank", "kernelrank", bot=True)


def member(of: dict[str, Any], roles: list[str], permissions: int = MEMBER, nick: str | None = None) -> dict[str, Any]:
    """A guild member as an interaction carries it (with the member's permissions in the channel)."""
    return {
        "user": of,
        "nick": nick,
        "avatar": None,
        "banner": None,
        "roles": roles,
        "joined_at": timestamp(),
        "premium_since": None,
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "permissions": str(permissions),
        "communication_disabled_until": None,
        "unusual_dm_activity_until": None,
    }


def role(role_id: str, name: str, permissions: int, position: int) -> dict[str, Any]:
    return {
        "id": role_id,
        "name": name,
        "description": None,
        "color": 0,
        "colors": {"primary_color": 0},
        "hoist": False,
        "icon": None,
        "unicode_emoji": None,
        "position": position,
        "permissions": str(permissions),
        "managed": False,
        "mentionable": False,
        "flags": 0,
        "tags": {},
    }


def text_channel(
    channel_id: str, name: str, guild_id: str = GUILD_ID, kind: int = GUILD_TEXT, position: int = 0
) -> dict[str, Any]:
    return {
        "id": channel_id,
        "type": kind,
        "guild_id": guild_id,
        "name": name,
        "position": position,
        "permission_overwrites": [],
        "topic": None,
        "nsfw": False,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "parent_id": None,
        "default_auto_archive_duration": 1440,
        "flags": 0,
    }


def interaction_channel(channel: dict[str, Any], permissions: int = MEMBER) -> dict[str, Any]:
    """The partial channel an interaction carries: the channel plus the invoking member's permissions in it."""
    return {**channel, "permissions": str(permissions)}


def guild(
    guild_id: str = GUILD_ID,
    name: str = "kernel club",
    channels: list[dict] | None = None,
    roles: list[dict] | None = None,
) -> dict[str, Any]:
    """A full guild as GUILD_CREATE sends it."""
    return {
        "id": guild_id,
        "name": name,
        "icon": None,
        "icon_hash": None,
        "splash": None,
        "discovery_splash": None,
        "owner_id": OWNER_ID,
        "afk_channel_id": None,
        "afk_timeout": 300,
        "widget_enabled": False,
        "verification_level": 0,
        "default_message_notifications": 1,
        "explicit_content_filter": 0,
        "roles": roles
        if roles is not None
        else [
            role(guild_id, "@everyone", MEMBER, 0),
            role(ADMIN_ROLE, "Admin", ADMINISTRATOR, 2),
            role(COMPETITOR_ROLE, "Competitor", 0, 1),
        ],
        "emojis": [],
        "features": [],
        "mfa_level": 0,
        "application_id": None,
        "system_channel_id": None,
        "system_channel_flags": 0,
        "rules_channel_id": None,
        "max_presences": None,
        "max_members": 500000,
        "vanity_url_code": None,
        "description": None,
        "banner": None,
        "premium_tier": 0,
        "premium_subscription_count": 0,
        "preferred_locale": "en-US",
        "public_updates_channel_id": None,
        "max_video_channel_users": 25,
        "max_stage_video_channel_users": 50,
        "nsfw_level": 0,
        "stickers": [],
        "premium_progress_bar_enabled": False,
        "safety_alerts_channel_id": None,
        "incidents_data": None,
        "joined_at": timestamp(),
        "large": False,
        "unavailable": False,
        "member_count": 3,
        "voice_states": [],
        "members": [],
        "channels": channels
        if channels is not None
        else [
            text_channel(KERNELS_CHANNEL, "kernels", guild_id),
            text_channel(ANNOUNCE_CHANNEL, "announcements", guild_id, position=1),
        ],
        "threads": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
    }


def application() -> dict[str, Any]:
    return {
        "id": APPLICATION_ID,
        "name": "kernelrank",
        "icon": None,
        "description": "GPU kernel leaderboards",
        "bot_public": False,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "flags": 0,
        "owner": user(OWNER_ID, "owner"),
        "team": None,
        "summary": "",
        "bot": BOT_USER,
        "interactions_endpoint_url": None,
        "approximate_guild_count": 1,
        "redirect_uris": [],
        "tags": [],
        "integration_types_config": {"0": {}},
    }


def attachment(
    attachment_id: str, filename: str, size: int, url: str, content_type: str | None, ephemeral: bool = False
) -> dict[str, Any]:
    data = {
        "id": attachment_id,
        "filename": filename,
        "size": size,
        "url": url,
        "proxy_url": url,
        "content_type": content_type,
    }
    if ephemeral:
        data["ephemeral"] = True
    return data


def message(
    message_id: str,
    channel_id: str,
    *,
    author: dict[str, Any] = BOT_USER,
    content: str = "",
    embeds: list | None = None,
    attachments: list | None = None,
    components: list | None = None,
    flags: int = 0,
    nonce: str | None = None,
    reference: dict | None = None,
    webhook_id: str | None = None,
    guild_id: str | None = None,
) -> dict[str, Any]:
    data = {
        "id": message_id,
        "channel_id": channel_id,
        "author": author,
        "content": content,
        "timestamp": timestamp(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "mention_channels": [],
        "attachments": attachments or [],
        "embeds": embeds or [],
        "reactions": [],
        "pinned": False,
        "type": 19 if reference else 0,
        "flags": flags,
        "components": components or [],
    }
    if nonce is not None:
        data["nonce"] = nonce
    if reference is not None:
        data["message_reference"] = {
            "type": 0,
            **{k: str(v) if k.endswith("_id") else v for k, v in reference.items()},
            "channel_id": str(reference.get("channel_id") or channel_id),
        }
    if webhook_id is not None:
        data["webhook_id"] = webhook_id
        data["application_id"] = APPLICATION_ID
    if guild_id is not None:
        data["guild_id"] = guild_id
    return data


def thread(
    thread_id: str, parent: dict[str, Any], name: str, archive_minutes: int, kind: int = PUBLIC_THREAD
) -> dict[str, Any]:
    return {
        "id": thread_id,
        "type": kind,
        "guild_id": parent.get("guild_id"),
        "parent_id": parent["id"],
        "owner_id": BOT_ID,
        "name": name,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "total_message_sent": 0,
        "flags": 0,
        "applied_tags": [],
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": archive_minutes,
            "archive_timestamp": timestamp(),
            "locked": False,
            "create_timestamp": timestamp(),
        },
        "member": {"id": thread_id, "user_id": BOT_ID, "join_timestamp": timestamp(), "flags": 0},
    }
