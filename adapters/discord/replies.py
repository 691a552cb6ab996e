"""What the core publishes for Discord, posted where it belongs: progress, run reports, announcements.

The adapter reads its platform's replies through a durable consumer and acknowledges a batch only after it
is posted, so a restart loses nothing; a reply that comes again is posted once (the message nonce, see
``poster``) and a repeated edit changes nothing. Per reply:

- progress (``final`` false, with an ``update_key``) edits the submission's status message in place;
- a final report goes to the submission's thread (opened here if it does not exist yet), or to the channel
  as a reply to the status message where there is no thread, and updates the status message's line;
- an announcement is a plain message in its channel;
- a result's details (``data["kind"] == "detail"``) are for its author alone: a private thread in the channel
  that mentions them (mentioning adds them), or, where no thread can be opened (a direct message with the bot,
  missing permissions), a direct message. Never the public thread: where their direct messages are closed too,
  the channel is told that the details did not reach them, and how to read them.

Discord refusing a reply for good (no access to the channel, a deleted channel) is logged and skipped;
anything that may pass (a 5xx, a 429 beyond the library's own waiting, a network error) is raised so the
batch is delivered again.
"""

from __future__ import annotations

import logging

import discord

from adapters.discord.live import LiveStatus
from adapters.discord.poster import UNKNOWN_CHANNEL, Poster, nonce_for
from adapters.discord.render import Outgoing, render_reply, status_line
from core.contracts.messages import Part, PartKind, Reply, ReplyTo, Tone

log = logging.getLogger(__name__)


class ReplyRouter:
    def __init__(self, poster: Poster, live: LiveStatus) -> None:
        self._poster = poster
        self._live = live
        self._private_threads: dict[str, int] = {}  # reply id -> its private thread, so a repeat posts there

    async def handle(self, replies: list[Reply]) -> None:
        """The durable consumer's handler: post a batch, raising only for trouble that may pass."""
        for reply in latest_only(replies):
            try:
                await self._route(reply)
            except discord.HTTPException as exc:
                if exc.status >= 500 or exc.status == 429:
                    raise
                log.warning(
                    "Discord refused reply %s for channel %s (%s %s); skipping it",
                    reply.id,
                    reply.reply_to.channel,
                    exc.status,
                    exc.text,
                )
            except ValueError:
                log.warning("reply %s has no usable Discord channel (%r); skipping it", reply.id, reply.reply_to)

    async def _route(self, reply: Reply) -> None:
        to = reply.reply_to
        channel = int(to.channel)
        status = int(to.message) if to.message else None
        if reply.data.get("kind") == "announcement":
            await self._poster.send(channel, render_reply(reply), nonce=nonce_for(reply.id))
            return
        if reply.data.get("kind") == "detail":
            await self._private(reply)
            return
        if not reply.final:
            if status and reply.update_key:
                await self._live.update(channel, status, status_line(reply), run=reply.update_key, final=False)
            return
        await self._post(to, render_reply(reply), nonce_for(reply.id), reply.title)
        if status and reply.update_key:
            line = status_line(reply, label=str(reply.data.get("gpu") or ""))
            await self._live.update(channel, status, line, run=reply.update_key, final=True)

    async def _private(self, reply: Reply) -> None:
        to, out, nonce = reply.reply_to, render_reply(reply), nonce_for(reply.id)
        if not to.user.isdigit():
            log.warning("reply %s is private but names no Discord user; skipping it", reply.id)
            return
        thread = self._private_threads.get(reply.id)
        try:
            if thread is None:
                if len(self._private_threads) > 10_000:
                    self._private_threads.clear()
                thread = self._private_threads[reply.id] = await self._poster.private_thread(
                    int(to.channel), reply.title
                )
            await self._poster.send(thread, out, nonce=nonce)
        except discord.HTTPException as exc:
            if exc.status >= 500 or exc.status == 429:
                raise
            log.info(
                "no private thread for reply %s (%s %s); sending it as a direct message", reply.id, exc.status, exc.text
            )
        else:
            return
        try:
            await self._poster.direct_message(int(to.user), out, nonce=nonce)
        except discord.HTTPException as exc:
            if exc.status >= 500 or exc.status == 429:
                raise
            log.warning("no direct message either for reply %s (%s %s); saying so", reply.id, exc.status, exc.text)
            await self._poster.send(int(to.channel), _undelivered(reply), nonce=nonce_for(f"undelivered-{reply.id}"))

    async def _post(self, to: ReplyTo, out: Outgoing, nonce: str, title: str) -> None:
        if not to.thread:
            await self._poster.send(
                int(to.channel), out, nonce=nonce, reply_to_message=int(to.message) if to.message else None
            )
            return
        try:
            await self._poster.send(int(to.thread), out, nonce=nonce)
        except discord.NotFound as exc:
            if exc.code != UNKNOWN_CHANNEL:
                raise
            # The thread was never opened (the adapter stopped right after the core accepted): open it now.
            try:
                await self._poster.start_thread(int(to.channel), int(to.thread), title or "submission")
            except discord.NotFound:  # its status message is gone too: answer in the channel
                await self._poster.send(int(to.channel), out, nonce=nonce)
                return
            await self._poster.send(int(to.thread), out, nonce=nonce)


def _undelivered(reply: Reply) -> Outgoing:
    """What the channel is told, without the details, when neither a private thread nor a direct message could
    carry them: the public report says they went privately, so their author must learn that they did not."""
    user, submission = reply.reply_to.user, reply.data.get("submission_id")
    again = f"`/leaderboard submission {submission}` shows them to you alone" if submission else "ask an admin"
    return render_reply(
        Reply(
            reply_to=reply.reply_to,
            parts=[
                Part(kind=PartKind.MENTION, text=user),
                Part(
                    kind=PartKind.TEXT,
                    text=f"I could not send you the details of submission #{submission}: I may not open a private "
                    f"thread here and your direct messages are closed. {again}.",
                ),
            ],
            tone=Tone.WARNING,
            title="Details not delivered",
        )
    )


def latest_only(replies: list[Reply]) -> list[Reply]:
    """The batch without progress that a later reply of the same run makes stale, in order."""
    last_index = {}
    finals = {r.update_key for r in replies if r.final and r.update_key}
    for index, reply in enumerate(replies):
        if reply.update_key and not reply.final:
            last_index[reply.update_key] = index
    return [
        r
        for i, r in enumerate(replies)
        if r.final or not r.update_key or (r.update_key not in finals and last_index[r.update_key] == i)
    ]
