"""Who is asking: the adapter vouches for the Slack user behind each request.

Slack sends only a user id with events (and a legacy user name with slash commands), so the display
name comes from ``users.info``, cached for an hour. When Slack will not say (no ``users:read`` scope,
a network error), the name Slack sent or the bare id stands in: identity never blocks a command.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from core.contracts.messages import Actor, Platform

log = logging.getLogger(__name__)
NAME_TTL_S = 3600.0
MAX_CACHED = 10_000


class Identities:
    def __init__(self, client: AsyncWebClient, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._clock = clock
        self._names: dict[str, tuple[float, str, list[str]]] = {}

    async def actor(self, user_id: str, fallback_name: str = "") -> Actor:
        """The ``Actor`` for a Slack user id: display name and workspace role (``slack-admin``/``slack-owner``)."""
        cached = self._names.get(user_id)
        if cached is None or self._clock() - cached[0] > NAME_TTL_S:
            cached = (self._clock(), *await self._lookup(user_id, fallback_name))
            if len(self._names) >= MAX_CACHED:
                self._names.clear()
            self._names[user_id] = cached
        _, name, roles = cached
        return Actor(platform=Platform.SLACK, user_id=user_id, display_name=name, roles=list(roles))

    async def _lookup(self, user_id: str, fallback_name: str) -> tuple[str, list[str]]:
        try:
            response = await self._client.users_info(user=user_id)
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as exc:
            log.warning("users.info for %s failed (%s); using %r", user_id, _reason(exc), fallback_name or user_id)
            return fallback_name or user_id, []
        user = response.get("user") or {}
        profile = user.get("profile") or {}
        name = (
            profile.get("display_name")
            or profile.get("real_name")
            or user.get("real_name")
            or user.get("name")
            or fallback_name
            or user_id
        )
        roles = [role for role, flag in (("slack-owner", "is_owner"), ("slack-admin", "is_admin")) if user.get(flag)]
        return name.strip()[:80] or user_id, roles


def _reason(exc: Exception) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error", "error"))
    return type(exc).__name__
