"""Interaction objects as Discord's gateway sends them (``INTERACTION_CREATE``), per Discord's documentation.

- ``slash``: an application command (type 2) from a guild channel or a DM: ``data.options`` nests a
  subcommand group (option type 2) and a subcommand (type 1) around the values; an attachment option's value
  is an id resolved in ``data.resolved.attachments``, a user option's in ``data.resolved.users`` (and
  ``members`` in a guild).
- ``autocomplete``: type 4, the same shape with the option being typed marked ``focused``.
- ``select``: a message component (type 3): ``data.custom_id``, ``data.component_type`` 3, ``data.values`` and
  the ``message`` the menu is on.

Option types are taken from the commands the bot registered with the fake, so a payload matches what Discord
would build for that command; without them, the Python type of each value decides.
"""

from __future__ import annotations

import secrets
from typing import Any

from tests.fakes.discord import objects as o
from tests.fakes.discord.server import FakeDiscord

ADA = o.user("1300000000000001001", "ada", "Ada")
BOB = o.user("1300000000000001002", "bob", "Bob")
SIZE_LIMIT = 10 * 1024 * 1024
GUILD_CONTEXT, BOT_DM_CONTEXT, PRIVATE_CHANNEL_CONTEXT = 0, 1, 2
STRING, INTEGER, BOOLEAN, USER, NUMBER, ATTACHMENT = 3, 4, 5, 6, 10, 11


def _base(
    kind: int,
    *,
    user: dict,
    roles: list[str],
    permissions: int,
    channel: dict | None,
    guild: bool,
    context: int,
    app_permissions: int,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": o.snowflake(),
        "application_id": o.APPLICATION_ID,
        "type": kind,
        "token": "aW50ZXJhY3Rpb246" + secrets.token_urlsafe(48),
        "version": 1,
        "locale": "en-US",
        "app_permissions": str(app_permissions),
        "entitlements": [],
        "attachment_size_limit": SIZE_LIMIT,
        "context": context,
    }
    if guild:
        channel = channel or o.text_channel(o.KERNELS_CHANNEL, "kernels")
        payload.update(
            guild_id=o.GUILD_ID,
            guild={"id": o.GUILD_ID, "locale": "en-US", "features": []},
            guild_locale="en-US",
            member=o.member(user, roles, permissions),
            authorizing_integration_owners={"0": o.GUILD_ID},
        )
    else:
        channel = channel or {
            "id": "1300000000000000900",
            "type": o.DM,
            "last_message_id": None,
            "flags": 0,
            "recipients": [user],
        }
        payload.update(
            user=user,
            authorizing_integration_owners={"0": o.GUILD_ID} if context == BOT_DM_CONTEXT else {"1": user["id"]},
        )
    payload.update(channel=o.interaction_channel(channel, permissions), channel_id=channel["id"])
    return payload


def slash(
    fake: FakeDiscord,
    path: list[str],
    options: dict[str, Any] | None = None,
    *,
    user: dict = ADA,
    roles: list[str] | None = None,
    permissions: int = o.MEMBER,
    attachments: dict[str, dict] | None = None,
    users: dict[str, dict] | None = None,
    channel: dict | None = None,
    guild: bool = True,
    context: int | None = None,
    app_permissions: int = o.BOT_PERMISSIONS,
    focused: str | None = None,
) -> dict[str, Any]:
    """``/leaderboard submit ranked`` is ``path=["leaderboard", "submit", "ranked"]``; ``attachments`` and
    ``users`` map option names to attachment and user objects."""
    roles = roles if roles is not None else [o.COMPETITOR_ROLE]
    context = context if context is not None else (GUILD_CONTEXT if guild else BOT_DM_CONTEXT)
    payload = _base(
        4 if focused else 2,
        user=user,
        roles=roles,
        permissions=permissions,
        channel=channel,
        guild=guild,
        context=context,
        app_permissions=app_permissions,
    )
    definition = _registered(fake, path[0])
    leaf = definition
    for name in path[1:]:
        leaf = next((opt for opt in (leaf or {}).get("options", []) if opt["name"] == name), None)
    types = {opt["name"]: opt["type"] for opt in (leaf or {}).get("options", [])}
    values: list[dict[str, Any]] = []
    resolved: dict[str, Any] = {}
    for name, value in (options or {}).items():
        values.append(
            {
                "name": name,
                "type": types.get(name, _type_of(value)),
                "value": value,
                **({"focused": True} if name == focused else {}),
            }
        )
    for name, item in (attachments or {}).items():
        values.append({"name": name, "type": ATTACHMENT, "value": item["id"]})
        resolved.setdefault("attachments", {})[item["id"]] = item
    for name, item in (users or {}).items():
        values.append({"name": name, "type": USER, "value": item["id"]})
        resolved.setdefault("users", {})[item["id"]] = item
        if guild:
            resolved.setdefault("members", {})[item["id"]] = {
                k: v for k, v in o.member(item, []).items() if k != "user"
            }
    for depth, name in reversed(list(enumerate(path[1:], start=1))):
        kind = 1 if depth == len(path) - 1 else 2  # the last name is the subcommand, the others groups
        values = [{"name": name, "type": kind, "options": values}]
    data: dict[str, Any] = {
        "id": (definition or {}).get("id") or o.snowflake(),
        "name": path[0],
        "type": 1,
        "options": values,
    }
    if resolved and not focused:
        data["resolved"] = resolved
    if guild:
        data["guild_id"] = o.GUILD_ID
    payload["data"] = data
    return payload


def autocomplete(fake: FakeDiscord, path: list[str], options: dict[str, Any], focused: str, **kwargs: Any) -> dict:
    return slash(fake, path, options, focused=focused, **kwargs)


def select(
    message: dict[str, Any], custom_id: str, values: list[str], *, user: dict = ADA, roles: list[str] | None = None
) -> dict[str, Any]:
    """A user's pick in a select menu on ``message`` (the message object as the fake stored it)."""
    channel = {"id": message["channel_id"], "type": o.GUILD_TEXT, "guild_id": o.GUILD_ID, "name": "kernels"}
    payload = _base(
        3,
        user=user,
        roles=roles if roles is not None else [o.COMPETITOR_ROLE],
        permissions=o.MEMBER,
        channel=channel,
        guild=True,
        context=GUILD_CONTEXT,
        app_permissions=o.BOT_PERMISSIONS,
    )
    payload.update(message=message, data={"custom_id": custom_id, "component_type": 3, "values": values})
    return payload


def button(message: dict[str, Any], custom_id: str, *, user: dict = ADA) -> dict[str, Any]:
    payload = select(message, custom_id, [], user=user)
    payload["data"] = {"custom_id": custom_id, "component_type": 2}
    return payload


def _registered(fake: FakeDiscord, name: str) -> dict[str, Any] | None:
    for commands in fake.commands.values():
        for command in commands:
            if command["name"] == name:
                return command
    return None


def _type_of(value: Any) -> int:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return NUMBER
    return STRING
