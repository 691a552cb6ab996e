"""Posting with the bot token: messages, edits and threads, by channel and message id alone.

Everything here works without an interaction token, so results that arrive after the token's 15 minutes
still reach their thread. Channels are addressed as ``PartialMessageable`` (no fetch first). A message sent
with a ``nonce`` is sent with ``enforce_nonce``: Discord returns the earlier message instead of posting a
second one with the same nonce in the last few minutes, which makes a re-delivered reply post once.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
from typing import Any, Final

import discord

from adapters.discord.pages import pager_for
from adapters.discord.render import Outgoing

log = logging.getLogger(__name__)

THREAD_EXISTS = 160004  # "A thread has already been created for this message"
UNKNOWN_CHANNEL = 10003
UNKNOWN_MESSAGE = 10008
NONCE_CHARS = 25  # Discord's limit on a nonce string
THREAD_ARCHIVE_MINUTES: Final = 1440


def nonce_for(key: str) -> str:
    """A nonce Discord accepts (25 characters at most) that is the same for the same key."""
    return hashlib.sha256(key.encode()).hexdigest()[:NONCE_CHARS]


def message_kwargs(out: Outgoing) -> dict:
    """discord.py keyword arguments for one outgoing message (fresh file objects every call)."""
    kwargs: dict = {
        "embeds": [discord.Embed.from_dict(e) for e in out.embeds],
        "files": [discord.File(io.BytesIO(data), filename=name) for name, data in out.files],
    }
    if out.content:
        kwargs["content"] = out.content
    pager = pager_for(out)
    if pager is not None:
        kwargs["view"] = pager
    return kwargs


class Poster:
    def __init__(self, client: discord.Client) -> None:
        self.client = client

    def _channel(self, channel_id: int) -> discord.PartialMessageable:
        return self.client.get_partial_messageable(channel_id)

    async def send(
        self, channel_id: int, out: Outgoing, *, nonce: str | None = None, reply_to_message: int | None = None
    ) -> discord.Message:
        kwargs = message_kwargs(out)
        if reply_to_message:
            kwargs["reference"] = discord.MessageReference(
                message_id=reply_to_message, channel_id=channel_id, fail_if_not_exists=False
            )
        if nonce:  # discord.py's overloads take no None for it
            kwargs["nonce"] = nonce
        return await self._channel(channel_id).send(**kwargs)

    async def send_text(self, channel_id: int, text: str, *, nonce: str | None = None) -> discord.Message:
        extra: dict[str, Any] = {"nonce": nonce} if nonce else {}
        return await self._channel(channel_id).send(content=text, **extra)

    async def edit_text(self, channel_id: int, message_id: int, text: str) -> None:
        await self._channel(channel_id).get_partial_message(message_id).edit(content=text)

    async def read_text(self, channel_id: int, message_id: int) -> str | None:
        """A message's content, or ``None`` when it cannot be read (gone, or no permission)."""
        try:
            return (await self._channel(channel_id).fetch_message(message_id)).content
        except discord.HTTPException as exc:
            log.info("cannot read message %s in %s: %s", message_id, channel_id, exc)
            return None

    async def delete(self, channel_id: int, message_id: int) -> None:
        with contextlib.suppress(discord.NotFound):
            await self._channel(channel_id).get_partial_message(message_id).delete()

    async def private_thread(self, channel_id: int, name: str) -> int:
        """Open a private thread in a channel (only those it mentions, and moderators, can read it); its id."""
        made = await self.client.http.start_thread_without_message(
            channel_id,
            name=name[:100] or "details",
            auto_archive_duration=THREAD_ARCHIVE_MINUTES,
            type=discord.ChannelType.private_thread.value,
            invitable=False,
        )
        return int(made["id"])

    async def direct_message(self, user_id: int, out: Outgoing, *, nonce: str | None = None) -> None:
        channel = await self.client.http.start_private_message(user_id)
        await self.send(int(channel["id"]), out, nonce=nonce)

    async def start_thread(self, channel_id: int, message_id: int, name: str) -> int:
        """Open a thread on a message; its id is the message's id. Opening one that exists is not an error."""
        try:  # the HTTP call itself: PartialMessage.create_thread wants guild data a partial channel lacks
            await self.client.http.start_thread_with_message(
                channel_id,
                message_id,
                name=name[:100] or "submission",
                auto_archive_duration=THREAD_ARCHIVE_MINUTES,
                rate_limit_per_user=None,
            )
        except discord.HTTPException as exc:
            if exc.code != THREAD_EXISTS:
                raise
        return message_id
