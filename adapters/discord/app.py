"""``kernelrank discord``: the Discord bot, a translator between Discord and the core.

Interactions become ``Command`` messages sent to the core over NATS; the ``Reply`` messages the core publishes
for Discord become Discord messages (``replies``). The bot holds no data of its own: what it shows comes from
the core, and where to post comes with each reply.

Gateway intents: only ``guilds`` (channel types and role names; no privileged intent). Commands are registered
with the servers listed in ``KERNELRANK_DISCORD_GUILDS`` at every start (instant, for development); global
registration is an explicit admin step (``kernelrank discord --sync-global`` or ``/admin sync``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import discord
from discord import app_commands

from adapters.discord.commands import register_commands
from adapters.discord.core_link import Catalogue, CoreLink
from adapters.discord.endpoint import use_api, use_gateway_of
from adapters.discord.live import LiveStatus
from adapters.discord.poster import Poster
from adapters.discord.replies import ReplyRouter
from adapters.discord.respond import answer_stale_component
from adapters.discord.services import Services
from core.contracts.bus import Bus, BusError, Role, Running
from core.contracts.config import Settings
from core.contracts.messages import Platform
from core.contracts.tasks import cancel_and_wait

log = logging.getLogger(__name__)

REPLY_BATCH = 16
REPLY_ACK_WAIT_S = 120.0  # Discord's rate limits can hold a batch for a while; do not redeliver it meanwhile


class DiscordSetupError(ConnectionError):
    """The bot cannot start: no token, a token Discord refuses, or no NATS; the message says what to do."""


async def connect_bus(url: str, settings: Settings) -> Bus:
    """The adapter's one connection to NATS, as the Discord role."""
    return await Bus.connect_as(url, "kernelrank-discord", settings, Role.DISCORD)


class KernelrankBot(discord.Client):
    """The bot; without a ``bus`` it only registers commands (``sync_global``)."""

    def __init__(self, settings: Settings, bus: Bus | None) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        super().__init__(
            intents=intents,
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False),
        )
        self.settings, self.bus = settings, bus
        self.tree = app_commands.CommandTree(self)
        core = CoreLink(bus, settings.request_timeout_s)
        poster = Poster(self)
        self.services = Services(
            settings=settings, core=core, catalogue=Catalogue(core), poster=poster, live=LiveStatus(poster)
        )
        self.router = ReplyRouter(poster, self.services.live)
        register_commands(self.tree, self.services)
        self._replies: Running | None = None
        self._replies_starting: asyncio.Task[None] | None = None

    async def setup_hook(self) -> None:
        if self.bus is None:
            return
        for guild_id in self.settings.discord_guilds:
            guild = discord.Object(id=int(guild_id))
            self.tree.copy_global_to(guild=guild)
            try:
                synced = await self.tree.sync(guild=guild)
            except discord.HTTPException as exc:
                log.error(
                    "could not register the commands in server %s (%s); is the bot in that server, invited "
                    "with the applications.commands scope?",
                    guild_id,
                    exc,
                )
                continue
            log.info("registered %d commands in server %s", len(synced), guild_id)
        if not self.settings.discord_guilds:
            log.info(
                "commands were not registered at start; run `kernelrank discord --sync-global` once (or set "
                "KERNELRANK_DISCORD_GUILDS for development servers)"
            )
        self._replies_starting = asyncio.create_task(self._serve_replies(self.bus))

    async def _serve_replies(self, bus: Bus) -> None:
        """Start the durable reply consumer, waiting for the core to create the replies stream if need be."""
        delay_s = 1.0
        while True:
            try:
                self._replies = await bus.consume_replies(
                    Platform.DISCORD,
                    self.router.handle,
                    batch=REPLY_BATCH,
                    ack_wait_s=REPLY_ACK_WAIT_S,
                    nak_delay_s=5.0,
                )
                return
            except BusError as exc:
                log.warning("cannot read replies yet (%s); trying again in %.0f s", exc, delay_s)
                await asyncio.sleep(delay_s)
                delay_s = min(2 * delay_s, 30.0)

    async def on_interaction(self, itx: discord.Interaction) -> None:
        await answer_stale_component(itx)

    async def on_ready(self) -> None:
        log.info(
            "Discord bot ready as %s (%s) in %d servers",
            self.user,
            self.user.id if self.user else "?",
            len(self.guilds),
        )

    async def close(self) -> None:
        if self._replies_starting is not None:
            await cancel_and_wait(self._replies_starting)
        if self._replies is not None:
            await self._replies.stop()
            self._replies = None
        ready = getattr(self._connection, "_ready_task", None)  # still waiting for guilds: it would outlive us
        if ready is not None and not ready.done():
            ready.cancel()
        await super().close()


async def run_discord(settings: Settings, nats_url: str, stop: asyncio.Event) -> None:
    """Run the bot until ``stop`` is set or Discord closes the connection for good."""
    try:
        bus = await connect_bus(nats_url, settings)
    except BusError as exc:
        raise DiscordSetupError(str(exc)) from exc
    bot = KernelrankBot(settings, bus)
    try:
        await _log_in(bot, settings)
        connection = asyncio.create_task(bot.connect(reconnect=True))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({connection, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if connection.done():
            connection.result()  # a fatal gateway error: raise it
    finally:
        await bot.close()
        with contextlib.suppress(Exception):
            await bus.close()


async def sync_global(settings: Settings) -> int:
    """Register every command globally (every server the bot is in), then return how many were registered."""
    bot = KernelrankBot(settings, bus=None)
    try:
        use_api(settings.discord_api_base)
        await _login_only(bot, settings)
        synced = await bot.tree.sync()
        log.info("registered %d commands globally", len(synced))
        return len(synced)
    finally:
        await bot.close()


async def _log_in(bot: KernelrankBot, settings: Settings) -> None:
    use_api(settings.discord_api_base)
    await _login_only(bot, settings)
    await use_gateway_of(bot)


async def _login_only(bot: discord.Client, settings: Settings) -> None:
    if not settings.discord_token:
        raise DiscordSetupError(
            "DISCORD_TOKEN is not set: copy the bot token from the Discord Developer Portal "
            "(Bot, Reset Token) into the environment or .env; docs/discord.md shows how."
        )
    try:
        await bot.login(settings.discord_token)
    except discord.LoginFailure as exc:
        raise DiscordSetupError(
            "Discord refused DISCORD_TOKEN: copy the bot token from the Developer Portal again (Bot, Reset Token)."
        ) from exc
