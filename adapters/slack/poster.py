"""Putting messages into Slack: post, update, ephemeral, delete, file uploads, and where to go instead.

Every Web API call goes through ``_call``, which sorts failures in two:

- ``SlackUnavailable``: worth trying again later (network, Slack's 5xx, rate limits that outlasted the
  client's own retries, a bad or revoked token that an operator will fix); the caller keeps the message;
- anything else Slack refuses is final for that message: it is logged with Slack's error code and the
  caller moves on (a deleted channel will not come back).

When the bot may not post in a channel (a private channel it was not invited to, a DM between two other
people), the message goes to the person's direct messages with the app instead, with a line saying why.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.blocks import SlackMessage, Upload, escape

log = logging.getLogger(__name__)
T = TypeVar("T")

# Slack error codes (https://docs.slack.dev/reference/methods/chat.postMessage#errors) by what they mean here.
RETRY_LATER = frozenset(
    {
        "ratelimited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
        "team_access_not_granted",
    }
)
CANNOT_POST_THERE = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "restricted_action",
        "ekm_access_denied",
        "team_access_not_granted",
        "user_not_in_channel",
        "cannot_reply_to_message",
        "thread_locked",
    }
)
BLOCKS_REFUSED = frozenset(
    {"invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_blocks", "msg_blocks_too_long"}
)
MESSAGE_GONE = frozenset({"message_not_found", "cant_update_message", "edit_window_closed"})


class SlackUnavailable(Exception):
    """Slack could not take the message now; try again later."""


class SlackRefused(Exception):
    """Slack refused the call for good; ``code`` is Slack's error code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Posted:
    channel: str
    ts: str


class Poster:
    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        self._dms: dict[str, str] = {}

    async def post(self, channel: str, message: SlackMessage, *, thread: str = "", user: str = "") -> Posted | None:
        """Post in ``channel`` (in ``thread`` when given), then its uploads; ``None`` when Slack refused it."""
        try:
            posted = await self._post(channel, message, thread)
        except SlackRefused as exc:
            if exc.code not in CANNOT_POST_THERE or not user:
                log.error("Slack refused a message for %s (%s); it is dropped", channel, exc.code)
                return None
            in_dm = await self._post_to_dm(user, message, channel)
            if in_dm is None:
                return None
            posted, thread = in_dm, ""
        await self.upload(posted.channel, message.uploads, thread=thread or "")
        return posted

    async def update(self, channel: str, ts: str, message: SlackMessage) -> bool:
        """Replace a message's content; ``False`` when it is gone or may no longer be edited."""
        try:
            await self._call(
                "chat.update",
                lambda: self._client.chat_update(channel=channel, ts=ts, text=message.text, blocks=message.blocks),
            )
        except SlackRefused as exc:
            if exc.code not in MESSAGE_GONE:
                log.warning("could not update message %s in %s (%s)", ts, channel, exc.code)
            return False
        return True

    async def delete(self, channel: str, ts: str) -> None:
        try:
            await self._call("chat.delete", lambda: self._client.chat_delete(channel=channel, ts=ts))
        except SlackRefused as exc:
            log.warning("could not delete message %s in %s (%s)", ts, channel, exc.code)

    async def ephemeral(self, channel: str, user: str, message: SlackMessage, *, thread: str = "") -> None:
        """Show a message to ``user`` alone; files and refused channels go to their direct messages."""
        try:
            await self._call(
                "chat.postEphemeral",
                lambda: self._client.chat_postEphemeral(
                    channel=channel, user=user, text=message.text, blocks=message.blocks, **_thread(thread)
                ),
            )
        except SlackRefused as exc:
            if exc.code not in CANNOT_POST_THERE and exc.code not in BLOCKS_REFUSED:
                log.error("Slack refused an ephemeral message for %s in %s (%s)", user, channel, exc.code)
                return
            await self._post_to_dm(user, message, channel)
            return
        if message.uploads:
            await self.upload_to_dm(user, message.uploads)

    async def upload(self, channel: str, uploads: list[Upload], *, thread: str = "") -> None:
        """Upload files into a channel or thread (``files_upload_v2``: three calls per file set)."""
        if not uploads:
            return
        items = [{"content": u.content, "filename": u.filename, "title": u.title} for u in uploads]
        try:
            await self._call(
                "files_upload_v2",
                lambda: self._client.files_upload_v2(file_uploads=items, channel=channel, **_thread(thread)),
            )
        except SlackRefused as exc:
            log.error("Slack refused %d file(s) for %s (%s)", len(uploads), channel, exc.code)

    async def upload_to_dm(self, user: str, uploads: list[Upload]) -> None:
        if uploads and (dm := await self.dm(user)):
            await self.upload(dm, uploads)

    async def dm(self, user: str) -> str:
        """The id of the app's direct-message channel with ``user`` (``""`` when Slack will not open one)."""
        if user not in self._dms:
            try:
                response = await self._call("conversations.open", lambda: self._client.conversations_open(users=user))
            except SlackRefused as exc:
                log.error("cannot open a direct message with %s (%s)", user, exc.code)
                return ""
            self._dms[user] = (response.get("channel") or {}).get("id", "")
        return self._dms[user]

    async def _post(self, channel: str, message: SlackMessage, thread: str) -> Posted:
        try:
            response = await self._call(
                "chat.postMessage",
                lambda: self._client.chat_postMessage(
                    channel=channel,
                    text=message.text,
                    blocks=message.blocks,
                    unfurl_links=False,
                    unfurl_media=False,
                    **_thread(thread),
                ),
            )
        except SlackRefused as exc:
            if exc.code not in BLOCKS_REFUSED:
                raise
            log.warning("Slack refused the blocks of a message (%s); posting its text alone", exc.code)
            response = await self._call(
                "chat.postMessage",
                lambda: self._client.chat_postMessage(
                    channel=channel, text=message.text, unfurl_links=False, **_thread(thread)
                ),
            )
        return Posted(channel=str(response.get("channel") or channel), ts=str(response["ts"]))

    async def _post_to_dm(self, user: str, message: SlackMessage, wanted: str) -> Posted | None:
        dm = await self.dm(user)
        if not dm:
            return None
        note = {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": escape(
                        "I cannot post in that conversation, so here it is. To get answers there, invite me: "
                        "/invite @kernelrank."
                    ),
                }
            ],
        }
        log.info("posting to %s's direct messages instead of %s", user, wanted)
        try:
            return await self._post(dm, SlackMessage(message.text, [note, *message.blocks][:50], message.uploads), "")
        except SlackRefused as exc:
            log.error("Slack refused a direct message to %s (%s); it is dropped", user, exc.code)
            return None

    async def _call(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except SlackApiError as exc:
            code = str(exc.response.get("error") or f"http_{exc.response.status_code}")
            if code in RETRY_LATER or exc.response.status_code >= 500 or exc.response.status_code == 429:
                log.warning("%s failed (%s); will try again later", what, code)
                raise SlackUnavailable(f"{what}: {code}") from exc
            raise SlackRefused(code) from exc
        except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("%s failed (%s); will try again later", what, type(exc).__name__)
            raise SlackUnavailable(f"{what}: {type(exc).__name__}") from exc


def _thread(thread: str) -> dict[str, Any]:
    return {"thread_ts": thread} if thread else {}
