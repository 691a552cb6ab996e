"""What Slack sends to an app, shaped as Slack documents it, and signed as Slack signs it.

- slash commands: form fields (``command``, ``text``, ``user_id``, ``channel_id``, ``trigger_id``,
  ``response_url``, ...), ``application/x-www-form-urlencoded``;
- interactivity (``view_submission``, ``block_actions``): one form field ``payload`` holding JSON;
- the Events API: a JSON ``event_callback`` envelope around the event, with ``event_id``.

``SlackSender`` posts them to an app's HTTP endpoint with ``X-Slack-Signature`` (v0, HMAC-SHA256 of
``v0:<timestamp>:<body>``) and ``X-Slack-Request-Timestamp``, optionally with retry headers.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp

_ids = itertools.count(1)
TEAM = {"id": "T0KERNEL", "domain": "kernelrank-test"}
APP_ID = "A0KERNEL"


def slash_command(
    text: str,
    *,
    user: str = "U0ALICE",
    user_name: str = "alice",
    channel: str = "C0GENERAL",
    command: str = "/kernelrank",
    response_url: str = "",
    team: str = "T0KERNEL",
) -> dict[str, str]:
    return {
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "team_id": team,
        "team_domain": TEAM["domain"],
        "channel_id": channel,
        "channel_name": "general",
        "user_id": user,
        "user_name": user_name,
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": f"{next(_ids)}.{int(time.time())}.fake0trigger",
    }


def view_submission(
    view: dict[str, Any], values: dict[str, dict[str, Any]], *, user: str = "U0ALICE", user_name: str = "alice"
) -> dict[str, Any]:
    """A ``view_submission`` of ``view`` (as the app opened it) with the person's input ``values``."""
    submitted = {
        **view,
        "state": {"values": values},
        "id": view.get("id") or f"V{next(_ids):08d}",
        "hash": view.get("hash") or "1700000000.h4sh",
        "team_id": TEAM["id"],
        "app_id": APP_ID,
        "root_view_id": view.get("id"),
        "previous_view_id": None,
        "app_installed_team_id": TEAM["id"],
        "bot_id": "B0KRBOT",
    }
    return {
        "type": "view_submission",
        "team": TEAM,
        "user": {"id": user, "username": user_name, "name": user_name, "team_id": TEAM["id"]},
        "api_app_id": APP_ID,
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "trigger_id": f"{next(_ids)}.fake0trigger",
        "view": submitted,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


def file_value(file: dict[str, Any]) -> dict[str, Any]:
    return {"type": "file_input", "files": [file]}


def select_value(value: str | None) -> dict[str, Any]:
    option = {"text": {"type": "plain_text", "text": value, "emoji": True}, "value": value} if value else None
    return {"type": "static_select", "selected_option": option}


def multi_select_value(values: list[str]) -> dict[str, Any]:
    return {
        "type": "multi_static_select",
        "selected_options": [{"text": {"type": "plain_text", "text": v, "emoji": True}, "value": v} for v in values],
    }


def block_actions(
    action: dict[str, Any],
    *,
    user: str = "U0ALICE",
    channel: str = "C0GENERAL",
    message: dict[str, Any] | None = None,
    view: dict[str, Any] | None = None,
    response_url: str = "",
) -> dict[str, Any]:
    """A ``block_actions`` payload: a button in a message, or a select in a modal (``view``)."""
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM["id"]},
        "api_app_id": APP_ID,
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "trigger_id": f"{next(_ids)}.fake0trigger",
        "team": TEAM,
        "enterprise": None,
        "is_enterprise_install": False,
        "actions": [{**action, "action_ts": f"{time.time():.6f}"}],
    }
    if view is not None:
        payload.update(container={"type": "view", "view_id": view.get("id")}, view=view)
    else:
        message = message or {}
        payload.update(
            container={
                "type": "message",
                "message_ts": message.get("ts", ""),
                "channel_id": channel,
                "is_ephemeral": False,
                "thread_ts": message.get("thread_ts"),
            },
            channel={"id": channel, "name": "general"},
            message=message,
            response_url=response_url,
            state={"values": {}},
        )
    return payload


def app_mention(
    text: str,
    *,
    user: str = "U0ALICE",
    channel: str = "C0GENERAL",
    files: list[dict] | None = None,
    thread_ts: str | None = None,
) -> dict[str, Any]:
    ts = f"{int(time.time())}.{next(_ids):06d}"
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": user,
        "text": text,
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
        "team": TEAM["id"],
        "client_msg_id": f"{next(_ids):08x}-c0de",
        "blocks": [
            {
                "type": "rich_text",
                "block_id": "b1",
                "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
            }
        ],
    }
    if files:
        event.update(files=files, upload=False, display_as_bot=False)
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def direct_message(text: str, *, user: str = "U0ALICE", files: list[dict] | None = None) -> dict[str, Any]:
    ts = f"{int(time.time())}.{next(_ids):06d}"
    event: dict[str, Any] = {
        "type": "message",
        "channel": "D0ALICE",
        "channel_type": "im",
        "user": user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "team": TEAM["id"],
    }
    if files:
        event.update(subtype="file_share", files=files, upload=True)
    return event


def event_callback(event: dict[str, Any], *, event_id: str = "", bot_user: str = "U0KRBOT") -> dict[str, Any]:
    return {
        "token": "gIkuvaNzQIHg97ATvDxqgjtO",
        "team_id": TEAM["id"],
        "context_team_id": TEAM["id"],
        "context_enterprise_id": None,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{next(_ids):08d}",
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM["id"],
                "user_id": bot_user,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-eyJldCI6ImFwcF9tZW50aW9uIn0-{next(_ids)}",
    }


def signature(secret: str, timestamp: str, body: str) -> str:
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return f"v0={digest}"


class SlackSender:
    """Posts payloads to an app's Slack endpoint as Slack does; returns (status, body text)."""

    def __init__(self, url: str, signing_secret: str) -> None:
        self.url, self.secret = url, signing_secret

    async def command(self, form: dict[str, str], **options: Any) -> tuple[int, str]:
        return await self.post(urlencode(form), "application/x-www-form-urlencoded", **options)

    async def interaction(self, payload: dict[str, Any], **options: Any) -> tuple[int, str]:
        return await self.post(
            urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded", **options
        )

    async def event(self, envelope: dict[str, Any], *, retry_num: int | None = None, **options: Any) -> tuple[int, str]:
        headers = (
            {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"}
            if retry_num is not None
            else {}
        )
        return await self.post(json.dumps(envelope), "application/json", headers=headers, **options)

    async def post(
        self,
        body: str,
        content_type: str,
        *,
        headers: dict[str, str] | None = None,
        timestamp: int | None = None,
        secret: str | None = None,
    ) -> tuple[int, str]:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        sent = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": signature(self.secret if secret is None else secret, ts, body),
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            **(headers or {}),
        }
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url, data=body.encode(), headers=sent) as response,
        ):
            return response.status, await response.text()
