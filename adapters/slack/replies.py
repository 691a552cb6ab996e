"""Replies from the core, posted to Slack: run progress, results, announcements, late errors.

They arrive through the adapter's durable consumer of ``replies.slack.>``, so replies published while the
adapter was down are posted when it comes back. The delivery ledger (a key-value bucket on the bus) makes
each reply appear once even when a batch is redelivered, and remembers the Slack message of each run's
progress, so the live line is updated in place (``chat.update``) across restarts too:

- progress (``final`` False, ``update_key`` the run): one status line in the thread, edited as it moves
  (at most one edit per second per run; a later one says more anyway);
- a final report: a new message in the thread (so its mention notifies), with uploads (charts, long
  tables); the progress line becomes the report's one-line summary;
- an announcement: a plain message in its channel; an ephemeral reply: shown to its user alone.

Slack being unreachable makes the batch come back later (``SlackUnavailable``); a reply Slack refuses for
good is logged and dropped rather than retried forever.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from adapters.slack.blocks import one_line, render
from adapters.slack.poster import Poster, SlackUnavailable
from core.contracts.bus import BusError, Ledger
from core.contracts.messages import Reply

log = logging.getLogger(__name__)
PROGRESS_MIN_INTERVAL_S = 1.0
MAX_TRACKED = 10_000


class ReplyDelivery:
    def __init__(self, poster: Poster, ledger: Ledger, clock: Callable[[], float] = time.monotonic) -> None:
        self._poster = poster
        self._ledger = ledger
        self._clock = clock
        self._last_edit: dict[str, float] = {}

    async def deliver(self, replies: list[Reply]) -> None:
        """Post a batch; raise when any reply must wait for Slack (the batch comes back, posted ones are skipped)."""
        waiting = 0
        for reply in replies:
            try:
                await self._one(reply)
            except (SlackUnavailable, BusError) as exc:
                waiting += 1
                log.warning("reply %s waits: %s", reply.id, exc)
            except Exception:
                log.exception("reply %s could not be rendered or posted; dropped", reply.id)
        if waiting:
            raise SlackUnavailable(f"{waiting} of {len(replies)} replies wait for Slack")

    async def _one(self, reply: Reply) -> None:
        target = reply.reply_to
        if not target.channel:
            log.warning("reply %s has no Slack channel; dropped", reply.id)
            return
        if not reply.final and reply.update_key:
            await self._progress(reply)
            return
        if await self._ledger.get(f"sent.{reply.id}") is not None:
            log.info("reply %s was posted already; skipped", reply.id)
            return
        announcement = reply.data.get("kind") == "announcement"
        thread = "" if announcement else target.thread
        message = render(reply)
        if reply.ephemeral and target.user:
            await self._poster.ephemeral(target.channel, target.user, message, thread=thread)
            ts = "ephemeral"
        else:
            posted = await self._poster.post(target.channel, message, thread=thread, user=target.user)
            ts = posted.ts if posted else "refused"
        await self._ledger.put(f"sent.{reply.id}", ts.encode())
        if reply.update_key:
            await self._close_progress(reply)

    async def _progress(self, reply: Reply) -> None:
        key = reply.update_key
        record = await self._record(key)
        if record.get("final"):
            return  # the report is out; a late progress event must not follow it
        now = self._clock()
        if now - self._last_edit.get(key, -PROGRESS_MIN_INTERVAL_S) < PROGRESS_MIN_INTERVAL_S:
            return
        if len(self._last_edit) >= MAX_TRACKED:
            self._last_edit.clear()
        self._last_edit[key] = now
        message = one_line(reply)
        if record.get("ts") and await self._poster.update(record["channel"], record["ts"], message):
            return
        target = reply.reply_to
        posted = await self._poster.post(target.channel, message, thread=target.thread, user=target.user)
        if posted:
            await self._save(key, {"channel": posted.channel, "ts": posted.ts, "final": False})

    async def _close_progress(self, reply: Reply) -> None:
        """Turn the run's progress line into the final one-line summary, and stop further edits."""
        record = await self._record(reply.update_key)
        if record.get("ts") and not record.get("final"):
            await self._poster.update(record["channel"], record["ts"], one_line(reply))
        await self._save(reply.update_key, {**record, "final": True})
        self._last_edit.pop(reply.update_key, None)

    async def _record(self, key: str) -> dict[str, Any]:
        raw = await self._ledger.get(f"live.{key}")
        try:
            found = json.loads(raw) if raw else {}
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    async def _save(self, key: str, record: dict[str, Any]) -> None:
        await self._ledger.put(f"live.{key}", json.dumps(record).encode())
