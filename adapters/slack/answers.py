"""Where an answer to a person goes, by how they asked.

- ``SlashAnswer``: a slash command or a button; the answer goes back through the request's
  ``response_url``, visible only to the asker; files (charts, long tables) go to their direct messages.
- ``ThreadAnswer``: a mention or a direct message; the answer goes in that thread for everyone, except
  private answers (errors, tokens, personal history), which are ephemeral there.
"""

from __future__ import annotations

import logging
from typing import Protocol

from slack_bolt.context.respond.async_respond import AsyncRespond

from adapters.slack.blocks import SlackMessage, render
from adapters.slack.poster import Posted, Poster
from core.contracts.messages import Reply, Tone

log = logging.getLogger(__name__)
FILES_IN_DM = {
    "type": "context",
    "elements": [{"type": "mrkdwn", "text": "I sent the attached files to you in a direct message."}],
}


class Answer(Protocol):
    async def send(self, reply: Reply, *, private: bool = False) -> Posted | None: ...


class SlashAnswer:
    def __init__(self, respond: AsyncRespond, poster: Poster, user: str) -> None:
        self._respond, self._poster, self._user = respond, poster, user

    async def send(self, reply: Reply, *, private: bool = False) -> Posted | None:
        message = render(reply)
        blocks = message.blocks + ([FILES_IN_DM] if message.uploads else [])
        try:
            response = await self._respond(
                text=message.text, blocks=blocks[:50], response_type="ephemeral", replace_original=False
            )
            if response.status_code != 200:
                log.warning("response_url answered %s: %s", response.status_code, response.body[:200])
        except Exception as exc:  # an expired or unreachable response_url must not lose the files below
            log.warning("could not answer through response_url: %s", type(exc).__name__)
        await self._poster.upload_to_dm(self._user, message.uploads)
        return None


class ThreadAnswer:
    def __init__(self, poster: Poster, channel: str, thread: str, user: str) -> None:
        self._poster, self.channel, self.thread, self.user = poster, channel, thread, user

    async def send(self, reply: Reply, *, private: bool = False) -> Posted | None:
        message = render(reply)
        if private or reply.ephemeral or reply.tone is Tone.ERROR:
            await self._poster.ephemeral(self.channel, self.user, message, thread=self.thread)
            return None
        return await self._poster.post(self.channel, message, thread=self.thread, user=self.user)

    async def post(self, message: SlackMessage) -> Posted | None:
        return await self._poster.post(self.channel, message, thread=self.thread, user=self.user)
