"""The Bolt app: the Slack adapter's listeners, wired to their dependencies, and the Web API client.

``build_app`` registers one module per feature (slash command, forms, mentions, buttons) and a global
middleware that lets each Events API delivery through once: Slack sends an event again when it did not
see a 2xx within 3 s (and Socket Mode after a reconnect), and Bolt does not deduplicate. The event id is
claimed in the delivery ledger, so a retry is dropped even when it reaches another process or a
restarted one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import actions, create_form, mentions, modal, slash
from adapters.slack.config import SlackConfig
from adapters.slack.deps import Deps
from core.contracts.bus import BusError

log = logging.getLogger(__name__)
API_TIMEOUT_S = 30


def web_client(config: SlackConfig) -> AsyncWebClient:
    """The Web API client: the configured base URL, and retries on 429 (honouring Retry-After), 5xx and
    dropped connections."""
    return AsyncWebClient(
        token=config.bot_token,
        base_url=config.api_url,
        timeout=API_TIMEOUT_S,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),
            AsyncServerErrorRetryHandler(max_retry_count=2),
        ],
    )


def build_app(deps: Deps) -> AsyncApp:
    app = AsyncApp(
        client=deps.client,
        signing_secret=deps.config.signing_secret,
        name="kernelrank",
        logger=logging.getLogger("adapters.slack.bolt"),
    )

    @app.middleware
    async def once_per_event(body: dict[str, Any], next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id:
            try:
                first = await deps.ledger.claim(f"event.{body.get('team_id', '')}.{event_id}")
            except BusError as exc:  # better to risk a repeat than to lose the event
                log.warning("could not check event %s for repeats: %s", event_id, exc)
                first = True
            if not first:
                log.info("event %s was handled already (a retry); skipped", event_id)
                return BoltResponse(status=200, body="")
        await next()
        return None

    slash.register(app, deps)
    modal.register(app, deps)
    create_form.register(app, deps)
    mentions.register(app, deps)
    actions.register(app, deps)
    _acknowledge_the_rest(app)
    return app


def _acknowledge_the_rest(app: AsyncApp) -> None:
    """Acknowledge whatever no feature handles (other events, buttons of older messages, shortcuts).

    Bolt answers an unhandled request 404; Slack then retries events and shows people an error, and
    disables an app's event subscriptions when too many deliveries fail. Registered last: the first
    matching listener wins.
    """
    anything = re.compile(".*")

    async def ignore(ack: Callable[[], Awaitable[None]], body: dict[str, Any]) -> None:
        await ack()
        log.debug("ignored a %s request", body.get("type") or (body.get("event") or {}).get("type"))

    for register in (app.event, app.action, app.shortcut, app.view, app.view_closed, app.options):
        register(anything)(ignore)
