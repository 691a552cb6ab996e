"""What every command needs, handed to the command modules as one object (no globals, no hidden wiring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import discord

from adapters.discord.core_link import Catalogue, CoreLink
from adapters.discord.identity import actor_of, reply_to_of
from adapters.discord.live import LiveStatus
from adapters.discord.poster import Poster
from adapters.discord.respond import Refusal, answer, defer
from core.contracts.commands import MAX_PROBLEM_BYTES, query_command
from core.contracts.config import Settings
from core.contracts.messages import Attachment, CommandKind


@dataclass
class Services:
    settings: Settings
    core: CoreLink
    catalogue: Catalogue
    poster: Poster
    live: LiveStatus

    async def query(
        self,
        itx: discord.Interaction,
        kind: CommandKind,
        *,
        public: bool,
        file: discord.Attachment | None = None,
        **args: Any,
    ) -> None:
        """The whole life of a query command: defer, ask the core (with the attached file), show its answer."""
        await defer(itx, public=public)
        attachment = await _download(file) if file else None
        cmd = query_command(actor_of(itx), reply_to_of(itx), kind, **args)
        cmd.attachment = attachment
        reply = await self.core.ask(cmd)
        await answer(itx, reply)


async def _download(file: discord.Attachment) -> Attachment:
    if file.size > MAX_PROBLEM_BYTES:
        raise Refusal(
            f"{file.filename} is {file.size // 1024:,} KiB; the most kernelrank takes is "
            f"{MAX_PROBLEM_BYTES // 1024 // 1024} MiB."
        )
    try:
        return Attachment(name=file.filename, content=await file.read())
    except discord.HTTPException as exc:
        raise Refusal(f"I could not download {file.filename} from Discord; attach it again.") from exc
