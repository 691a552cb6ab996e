"""Where the bot finds Discord: its REST API and its gateway, Discord's own unless a setting says otherwise.

discord.py keeps both addresses in class attributes (``Route.BASE`` for REST, interaction callbacks and
webhooks alike; ``DiscordWebSocket.DEFAULT_GATEWAY`` for the gateway), so they are set once per process, here
and nowhere else. ``KERNELRANK_DISCORD_API_BASE`` (the API root without its version, e.g.
``http://127.0.0.1:8123/api``) points the bot at a Discord-compatible server such as the test suite's fake.
The gateway address is then asked of that server (``GET /gateway/bot``), as Discord documents.
"""

from __future__ import annotations

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import INTERNAL_API_VERSION, Route

DISCORD_API = "https://discord.com/api"
DISCORD_GATEWAY = yarl.URL("wss://gateway.discord.gg/")


def use_api(base: str) -> None:
    """Send every REST call to ``base`` (Discord's API when empty)."""
    Route.BASE = f"{(base or DISCORD_API).rstrip('/')}/v{INTERNAL_API_VERSION}"
    if not base:
        DiscordWebSocket.DEFAULT_GATEWAY = DISCORD_GATEWAY


async def use_gateway_of(client: discord.Client) -> str:
    """Ask the API where its gateway is (``GET /gateway/bot``) and connect there; returns the address."""
    _, url, _ = await client.http.get_bot_gateway()
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
    return url
