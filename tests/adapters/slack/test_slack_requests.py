"""Requests no feature handles are still acknowledged: Slack retries events answered with an error, shows
people a warning for unanswered interactions, and turns off subscriptions that keep failing."""

from __future__ import annotations

import pytest

from tests.adapters.slack.slack_kit import fake_workspace, running_slack
from tests.fakes.slack import payloads

TEAM = {"id": "T0KERNEL", "domain": "kernelrank-test"}
USER = {"id": "U0ALICE", "username": "alice", "team_id": "T0KERNEL"}


@pytest.mark.parametrize(
    "event",
    [
        {"type": "app_home_opened", "user": "U0ALICE", "channel": "D0ALICE", "tab": "messages", "event_ts": "1.2"},
        {
            "type": "message",
            "channel": "C0GENERAL",
            "channel_type": "channel",
            "user": "U0ALICE",
            "text": "hi",
            "ts": "1.3",
            "event_ts": "1.3",
        },
        {
            "type": "message",
            "subtype": "message_changed",
            "channel": "D0ALICE",
            "channel_type": "im",
            "ts": "1.4",
            "message": {"type": "message", "user": "U0ALICE", "text": "edited", "ts": "1.1"},
            "event_ts": "1.4",
        },
        {
            "type": "message",
            "channel": "D0ALICE",
            "channel_type": "im",
            "bot_id": "B0OTHER",
            "text": "a bot",
            "ts": "1.5",
            "event_ts": "1.5",
        },
    ],
)
async def test_events_nobody_handles_are_acknowledged_quietly(nats_url, event):
    with fake_workspace() as fake:
        async with running_slack(nats_url, fake) as slack:
            assert await slack.sender.event(payloads.event_callback(event)) == (200, "")
            posted = [c for c in fake.calls if c.method.startswith("chat.")]
            assert posted == []


async def test_interactions_nobody_handles_are_acknowledged(nats_url):
    interactions = [
        {
            "type": "block_actions",
            "user": USER,
            "team": TEAM,
            "trigger_id": "1.fake",
            "actions": [
                {"action_id": "retired_button", "block_id": "b", "type": "button", "value": "1", "action_ts": "1.0"}
            ],
        },
        {"type": "shortcut", "callback_id": "someone_elses", "user": USER, "team": TEAM, "trigger_id": "1.fake"},
        {
            "type": "view_closed",
            "user": USER,
            "team": TEAM,
            "is_cleared": False,
            "view": {"id": "V1", "callback_id": "kr_submit", "type": "modal"},
        },
    ]
    with fake_workspace() as fake:
        async with running_slack(nats_url, fake) as slack:
            for payload in interactions:
                assert (await slack.sender.interaction(payload))[0] == 200, payload["type"]
