"""Socket Mode, the default: the adapter opens a WebSocket with the app-level token and answers envelopes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace

import pytest

from adapters.slack.run import SlackAdapter
from core.contracts.bus import Bus
from tests.adapters.slack.slack_kit import config_for
from tests.fakes.slack import FakeSlack
from tests.fakes.slack.payloads import app_mention, event_callback, slash_command


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


@pytest.fixture
async def adapter(nats_url: str, fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    bus = await Bus.connect(nats_url, name="socket-mode-test")
    await bus.ensure_streams([])
    running = SlackAdapter(bus, config_for(fake))
    await running.start()
    await running.serve_socket_mode()
    yield running
    await running.stop()
    await bus.close()


async def test_socket_mode_connects_with_the_app_token_and_answers_a_command(adapter, fake):
    opened = fake.calls_to("apps.connections.open")
    assert opened and all(call.auth == "app" for call in opened)
    (connected,) = fake.calls_to("socket.open")
    form = slash_command("help", response_url=fake.response_url("help"))
    ack = await asyncio.to_thread(fake.send_envelope, "slash_commands", form)
    assert set(ack) == {"envelope_id"}  # acknowledged, nothing posted publicly
    (answer,) = await fake.wait_for("response_url")
    assert answer.params["response_type"] == "ephemeral"
    assert "/kernelrank submit [MODE] [LEADERBOARD] [GPU ...]" in str(answer.params["blocks"])


async def test_a_redelivered_envelope_is_handled_once(adapter, fake):
    envelope = event_callback(app_mention("<@U0KRBOT> help"), event_id="Ev0SOCKET1")
    await asyncio.to_thread(fake.send_envelope, "events_api", envelope)
    await asyncio.to_thread(fake.send_envelope, "events_api", envelope, retry_attempt=1)
    await fake.wait_for("chat.postEphemeral")
    # The repeat was refused before its ack (the ledger check runs first), so no second answer can follow.
    assert len(fake.calls_to("socket.ack")) == 2
    assert len(fake.calls_to("chat.postEphemeral")) == 1


async def test_refused_tokens_stop_the_adapter_with_what_to_fix(nats_url):
    with FakeSlack() as fake:
        bus = await Bus.connect(nats_url, name="token-test")
        try:
            with pytest.raises(ConnectionError, match=r"SLACK_BOT_TOKEN \(invalid_auth\)"):
                await SlackAdapter(bus, replace(config_for(fake), bot_token="xoxb-revoked")).start()
            adapter = SlackAdapter(bus, replace(config_for(fake), app_token="xapp-revoked"))
            await adapter.start()
            with pytest.raises(ConnectionError, match="SLACK_APP_TOKEN"):
                await adapter.serve_socket_mode()
            await adapter.stop()
        finally:
            await bus.close()
