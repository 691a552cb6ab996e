"""Paginated messages: a body longer than one embed shows a page at a time, with buttons to turn them.

The pages live in this process, so buttons stop answering after ``PAGER_TIMEOUT_S`` or a restart; every
paginated message also carries the whole text as an attached file (``render``), so nothing is lost then.
"""

from __future__ import annotations

import discord

from adapters.discord.render import Outgoing

PAGER_TIMEOUT_S = 15 * 60


class Pager(discord.ui.View):
    """◀ / ▶ buttons that replace the message's first embed with the previous or next page."""

    def __init__(self, out: Outgoing, timeout_s: float = PAGER_TIMEOUT_S) -> None:
        super().__init__(timeout=timeout_s)
        self.out = out
        self.index = 0
        self._sync_buttons()

    @discord.ui.button(label="◀ Previous", style=discord.ButtonStyle.secondary, custom_id="kernelrank:page:previous")
    async def previous(self, itx: discord.Interaction, _: discord.ui.Button) -> None:
        await self._show(itx, self.index - 1)

    @discord.ui.button(label="Next ▶", style=discord.ButtonStyle.secondary, custom_id="kernelrank:page:next")
    async def next(self, itx: discord.Interaction, _: discord.ui.Button) -> None:
        await self._show(itx, self.index + 1)

    async def _show(self, itx: discord.Interaction, index: int) -> None:
        self.index = max(0, min(index, len(self.out.pages) - 1))
        self._sync_buttons()
        embeds = [discord.Embed.from_dict(self.out.page_embed(self.index))] + [
            discord.Embed.from_dict(e) for e in self.out.embeds[1:]
        ]
        await itx.response.edit_message(embeds=embeds, view=self)

    def _sync_buttons(self) -> None:
        self.previous.disabled = self.index == 0
        self.next.disabled = self.index >= len(self.out.pages) - 1


def pager_for(out: Outgoing) -> Pager | None:
    return Pager(out) if len(out.pages) > 1 else None
