"""Autocomplete for command options: leaderboard names, and the GPUs of the leaderboard being typed.

Discord asks while the user types (interaction type 4) and drops answers slower than 3 s, so choices come
from the ``Catalogue`` (a list refreshed from the core at most every 30 s). At most 25 choices are sent.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import discord
from discord import app_commands

from adapters.discord.core_link import Catalogue
from adapters.discord.identity import actor_of

MAX_CHOICES = 25
Autocomplete = Callable[[discord.Interaction, str], Coroutine[Any, Any, list[app_commands.Choice[str]]]]


def _choices(names: list[str], current: str) -> list[app_commands.Choice[str]]:
    typed = current.lower()
    ranked = sorted((n for n in names if typed in n.lower()), key=lambda n: (not n.lower().startswith(typed), n))
    return [app_commands.Choice(name=n[:100], value=n[:100]) for n in ranked[:MAX_CHOICES]]


def leaderboard_names(catalogue: Catalogue) -> Autocomplete:
    async def complete(itx: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return _choices([b.name for b in await catalogue.boards(actor_of(itx))], current)

    return complete


def gpu_names(catalogue: Catalogue) -> Autocomplete:
    """The GPUs of the leaderboard option already filled in, or every GPU any leaderboard offers."""

    async def complete(itx: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        boards = await catalogue.boards(actor_of(itx))
        chosen = str(getattr(itx.namespace, "leaderboard", "") or "").lower()
        gpus = [g for b in boards if not chosen or b.name.lower() == chosen for g in b.gpus]
        return _choices(list(dict.fromkeys(gpus)), current)

    return complete
