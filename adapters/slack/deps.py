"""What every Slack listener needs, built once per adapter and handed to each feature module."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.config import SlackConfig
from adapters.slack.identity import Identities
from adapters.slack.intake import FileIntake
from adapters.slack.poster import Poster
from core.contracts.bus import Bus, BusError, Ledger
from core.contracts.messages import Command, Reply
from core.contracts.reply_parts import error_reply

log = logging.getLogger(__name__)


@dataclass
class Deps:
    bus: Bus
    config: SlackConfig
    client: AsyncWebClient
    poster: Poster
    identities: Identities
    intake: FileIntake
    ledger: Ledger

    async def ask(self, command: Command, timeout_s: float | None = None) -> Reply:
        """The core's answer, or an error reply saying why there is none (core down, NATS gone)."""
        try:
            return await self.bus.request(command, timeout_s=timeout_s or self.config.request_timeout_s)
        except BusError as exc:
            log.warning("command %s (%s) got no answer: %s", command.id, command.kind.value, exc)
            return error_reply(command.reply_to, str(exc), command.id)
