"""What every command needs, handed to the command modules as one object (no globals, no hidden wiring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import discord

from adapters.discord.core_link import Catalogue, CoreLink
from adapters.discord.identity import actor_of, reply_to_of
from adapters.discord.live import LiveStatus
from adapters.discord.poster import Poster
from adapters.discord.respond import answer, defer
from core.contracts.commands import query_command
from core.contracts.config import Settings
from core.contracts.messages import CommandKind


@dataclass
class Services:
    settings: Settings
    core: CoreLink
    catalogue: Catalogue
    poster: Poster
    live: LiveStatus

    async def query(self, itx: discord.Interaction, kind: CommandKind, *, public: bool, **args: Any) -> None:
        """The whole life of a query command: defer, ask the core, show its answer."""
        await defer(itx, public=public)
        reply = await self.core.ask(query_command(actor_of(itx), reply_to_of(itx), kind, **args))
        await answer(itx, reply)
