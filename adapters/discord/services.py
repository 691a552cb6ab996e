"""What every command needs, handed to the command modules as one object (no globals, no hidden wiring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import discord

from adapters.discord.core_link import Catalogue, CoreLink
from adapters.discord.gpu_picker import pick_gpus
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
        gpu_menu: bool = False,
        **args: Any,
    ) -> None:
        """The whole life of a query command: defer, ask the core (with the attached file), show its answer.
        ``gpu_menu``: with no GPU named and several pools served, ask for them first (``/admin create``)."""
        await defer(itx, public=public)
        attachment = file and await _download(file)
        if gpu_menu and not args.get("gpu"):
            pools = await self.catalogue.pools(actor_of(itx))
            if len(pools) > 1:
                chosen = await pick_gpus(
                    itx,
                    f"The workers serve {', '.join(pools)}: which should **{args.get('name', 'it')}** run on?",
                    pools,
                    "create",
                    "Creating on",
                )
                if not chosen:
                    return
                args["gpu"] = ",".join(chosen)
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
