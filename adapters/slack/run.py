"""``kernelrank slack``: the Slack adapter as a process, in Socket Mode (default) or HTTP mode.

Socket Mode needs no public URL: the app opens a WebSocket to Slack with the app-level token. HTTP mode
(``--http --port P``) serves Slack's requests (slash commands, interactivity, events: one URL,
``/slack/events``) with aiohttp, behind a TLS reverse proxy; Bolt refuses requests whose signature or
timestamp (older than 5 minutes) does not check out. Either way the same app answers, and the reply
consumer posts what the core sends back.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.app import build_app, web_client
from adapters.slack.config import SlackConfig, slack_config
from adapters.slack.deps import Deps
from adapters.slack.identity import Identities
from adapters.slack.intake import FileIntake
from adapters.slack.poster import Poster
from adapters.slack.replies import ReplyDelivery
from core.contracts import subjects
from core.contracts.bus import Bus, BusError, Role, Running
from core.contracts.config import ConfigError, Settings
from core.contracts.messages import Platform
from core.contracts.tasks import cancel_and_wait

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
MAX_BODY_BYTES = 1024 * 1024  # Slack's payloads are far smaller; refuse anything larger unread
SDK_LOGGERS = ("slack_sdk", "slack_bolt", "adapters.slack.bolt")
STREAM_RETRY_S = 2.0  # how often to look for the replies stream before the core created it


async def connect_bus(url: str, settings: Settings) -> Bus:
    """The adapter's one connection to NATS, as the Slack role."""
    return await Bus.connect_as(url, "kernelrank-slack", settings, Role.SLACK)


class SlackAdapter:
    """The Bolt app and the reply consumer on one bus; serve it with ``serve_http`` or ``serve_socket_mode``."""

    def __init__(self, bus: Bus, config: SlackConfig, client: AsyncWebClient | None = None) -> None:
        self.bus = bus
        self.config = config
        self.client = client or web_client(config)
        self.app: AsyncApp | None = None
        self.deps: Deps | None = None
        self._consumer: Running | None = None
        self._replies: asyncio.Task[None] | None = None
        self._web: web.AppRunner | None = None
        self._socket: AsyncSocketModeHandler | None = None

    async def start(self) -> None:
        """Open the delivery ledger, build the app, and start posting the core's replies."""
        quiet_sdk_logs()
        await self._check_bot_token()
        ledger = await self.bus.ledger(subjects.ledger_bucket(Platform.SLACK.value))
        poster = Poster(self.client)
        self.deps = Deps(
            bus=self.bus,
            config=self.config,
            client=self.client,
            poster=poster,
            identities=Identities(self.client),
            intake=FileIntake(self.client, self.config),
            ledger=ledger,
        )
        self.app = build_app(self.deps)
        self._replies = asyncio.create_task(self._consume_replies(ReplyDelivery(poster, ledger)))

    async def _check_bot_token(self) -> None:
        """Fail at start, with what to fix, when Slack refuses the bot token; carry on when Slack is unreachable."""
        try:
            await self.client.auth_test()
        except SlackApiError as exc:
            raise ConnectionError(
                f"Slack refused SLACK_BOT_TOKEN ({exc.response.get('error')}): copy the Bot User "
                "OAuth Token (xoxb-...) from the app's OAuth & Permissions page."
            ) from exc
        except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("Slack is not reachable yet (%s); starting anyway", type(exc).__name__)

    async def _consume_replies(self, delivery: ReplyDelivery) -> None:
        """Start the reply consumer, waiting for the core to create the replies stream when it has not yet."""
        waited = False
        while True:
            try:
                self._consumer = await self.bus.consume_replies(
                    Platform.SLACK, delivery.deliver, batch=16, ack_wait_s=120.0, nak_delay_s=5.0, poll_s=0.5
                )
                break
            except BusError as exc:
                if not waited:
                    log.warning("replies cannot be consumed yet (%s); trying every %g s", exc, STREAM_RETRY_S)
                    waited = True
                await asyncio.sleep(STREAM_RETRY_S)
        if waited:
            log.info("consuming replies now")

    async def serve_http(self, host: str, port: int) -> str:
        """Serve Slack's requests on ``host:port`` (0: any free port); return the events URL."""
        assert self.app is not None, "start() first"
        app = self.app

        async def events(request: web.Request) -> web.Response:
            return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

        async def health(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        web_app = web.Application(client_max_size=MAX_BODY_BYTES)
        web_app.router.add_post(EVENTS_PATH, events)
        web_app.router.add_get("/healthz", health)
        self._web = web.AppRunner(web_app, access_log=None)
        await self._web.setup()
        site = web.TCPSite(self._web, host, port)
        await site.start()
        bound_host, bound_port = self._web.addresses[0][:2]
        url = f"http://{bound_host}:{bound_port}{EVENTS_PATH}"
        log.info("Slack adapter serving HTTP at %s", url)
        return url

    async def serve_socket_mode(self) -> None:
        """Connect to Slack over a WebSocket with the app-level token (reconnects on its own)."""
        assert self.app is not None, "start() first"
        # The Socket Mode client retries a refused token forever; ask once first, to stop with what to fix.
        try:
            await self.client.apps_connections_open(app_token=self.config.app_token)
        except SlackApiError as exc:
            raise ConnectionError(
                f"Slack refused a Socket Mode connection ({exc.response.get('error')}): check "
                "SLACK_APP_TOKEN (an xapp- token with connections:write) and that Socket Mode "
                "is on in the app's settings."
            ) from exc
        except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("Slack is not reachable yet (%s); connecting in the background", type(exc).__name__)
        self._socket = AsyncSocketModeHandler(self.app, self.config.app_token)
        await self._socket.connect_async()
        log.info("Slack adapter connected in Socket Mode")

    async def stop(self) -> None:
        if self._socket is not None:
            await self._socket.close_async()
        if self._web is not None:
            await self._web.cleanup()
        if self._replies is not None:
            await cancel_and_wait(self._replies)
        if self._consumer is not None:
            await self._consumer.stop()
        if self.deps is not None:
            await self.deps.intake.close()


def quiet_sdk_logs() -> None:
    """Keep Slack's libraries at INFO or above even when kernelrank logs at DEBUG: at DEBUG they log request
    bodies, and a body can hold what only its reader may see (a personal token, a private answer)."""
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < logging.INFO:
            logger.setLevel(logging.INFO)


def prepare(argv: list[str], settings: Settings) -> Callable[[asyncio.Event], Awaitable[None]]:
    """Parse ``kernelrank slack``'s options and check the settings; ``ConfigError`` says what is missing."""
    parser = argparse.ArgumentParser(prog="kernelrank slack", description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve HTTP instead of Socket Mode")
    parser.add_argument(
        "--port",
        type=int,
        default=settings.slack_http_port or 3000,
        help="HTTP mode's port (default KERNELRANK_SLACK_HTTP_PORT, else 3000)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP mode's address (default 127.0.0.1)")
    args = parser.parse_args(argv)
    http = args.http or settings.slack_http_port > 0
    config = slack_config(settings, http_port=args.port if http else 0, http_host=args.host)
    url = settings.resolved_nats_url()
    if not url:
        raise ConfigError("kernelrank is not running here: start it with `kernelrank up`, or set KERNELRANK_NATS_URL.")

    async def serve(stop: asyncio.Event) -> None:
        bus = await connect_bus(url, settings)
        adapter = SlackAdapter(bus, config)
        try:
            await adapter.start()
            if config.http_mode:
                await adapter.serve_http(config.http_host, config.http_port)
            else:
                await adapter.serve_socket_mode()
            await stop.wait()
        finally:
            await adapter.stop()
            await bus.close()

    return serve
