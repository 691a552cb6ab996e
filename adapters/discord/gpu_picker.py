"""A menu of GPUs (multi-select, at least one), for the person who ran the command alone.

Asked where no GPU was named and there is a choice: a submission to a leaderboard of several GPUs
(``commands.submit``).
"""

from __future__ import annotations

import asyncio

import discord

PICK_TIMEOUT_S = 180.0


class GpuPicker(discord.ui.View):
    """``chosen`` resolves with the pick; the message then says ``doing`` the GPUs chosen."""

    def __init__(self, owner_id: int, gpus: tuple[str, ...], purpose: str, doing: str) -> None:
        super().__init__(timeout=PICK_TIMEOUT_S)
        self.owner_id, self.doing = owner_id, doing
        self.chosen: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        menu: discord.ui.Select[GpuPicker] = discord.ui.Select(
            custom_id=f"kernelrank:{purpose}:gpus",
            placeholder="Choose one or more GPUs",
            min_values=1,
            max_values=len(gpus),
            options=[discord.SelectOption(label=g, value=g) for g in gpus],
        )
        menu.callback = self._picked  # type: ignore[method-assign,assignment]  # discord.py's way for one component
        self.menu = menu
        self.add_item(menu)

    async def interaction_check(self, itx: discord.Interaction) -> bool:
        return itx.user.id == self.owner_id

    async def _picked(self, itx: discord.Interaction) -> None:
        values = list(self.menu.values)
        await itx.response.edit_message(content=f"{self.doing} {', '.join(values)}…", view=None)
        if not self.chosen.done():
            self.chosen.set_result(values)
        self.stop()


async def pick_gpus(
    itx: discord.Interaction, question: str, gpus: tuple[str, ...], purpose: str, doing: str
) -> list[str]:
    """Ask ``question`` with the menu on the deferred answer; the GPUs chosen, or none after 3 minutes."""
    picker = GpuPicker(itx.user.id, gpus, purpose, doing)
    await itx.edit_original_response(content=question, view=picker)
    try:
        return await asyncio.wait_for(picker.chosen, PICK_TIMEOUT_S)
    except TimeoutError:
        await itx.edit_original_response(
            content="No GPU was chosen within 3 minutes, so nothing was done; run the command again.", view=None
        )
        return []
