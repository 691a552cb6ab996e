"""Requests and publishes across a NATS restart: asked again once NATS is back, and plain words when it is not.

NATS runs as ``NatsProcess`` (fixed port, same store) so it can be SIGKILLed and started again where the
clients reconnect. The "core" is a Bus answering commands in this process.
"""

from __future__ import annotations

import asyncio

import pytest
from fault_kit import NatsProcess

from core.contracts import subjects
from core.contracts.bus import Bus, CoreUnavailable, PayloadTooLarge, Reconnecting
from core.contracts.bus._errors import NOT_RUNNING, RECONNECTING
from core.contracts.messages import Actor, Attachment, Command, CommandKind, Part, PartKind, Platform, Reply, ReplyTo


def command(kind: CommandKind = CommandKind.LIST, attachment: Attachment | None = None) -> Command:
    return Command(
        actor=Actor(Platform.DISCORD, "ada"), reply_to=ReplyTo(Platform.DISCORD, "s1"), kind=kind, attachment=attachment
    )


@pytest.fixture
def nats(tmp_path) -> NatsProcess:
    server = NatsProcess(tmp_path / "nats")
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def answering(nats):
    """A core stand-in that answers every command and counts what it was asked."""
    asked: list[str] = []

    async def answer(cmd: Command) -> Reply:
        asked.append(cmd.id)
        return Reply(reply_to=cmd.reply_to, parts=[Part(PartKind.TEXT, text="ok")], in_reply_to=cmd.id)

    core = await Bus.connect(nats.url, name="core")
    await core.serve_commands(answer)
    yield asked
    await core.close()


async def test_a_request_sent_while_nats_restarts_is_answered_once_it_is_back(nats, answering):
    client = await Bus.connect(nats.url, name="client")
    try:
        nats.kill()
        asking = asyncio.create_task(client.request(command(), timeout_s=30))
        await asyncio.sleep(1.0)
        assert not asking.done()
        nats.start()
        reply = await asking
        assert reply.parts[0].text == "ok" and answering == [reply.in_reply_to]
    finally:
        await client.close()


async def test_no_responders_just_after_connecting_is_asked_again_until_the_core_subscribes(nats):
    """The CI flake of test_commands_are_handled_concurrently: the core's subscription arrived a moment late."""
    client = await Bus.connect(nats.url, name="client")
    core = await Bus.connect(nats.url, name="core")

    async def late_core() -> None:
        await asyncio.sleep(0.5)
        await core.serve_commands(lambda cmd: _ok(cmd))

    try:
        starting = asyncio.create_task(late_core())
        reply = await client.request(command(), timeout_s=20)
        await starting
        assert reply.parts[0].text == "ok"
    finally:
        await core.close()
        await client.close()


async def test_no_core_on_a_settled_connection_is_reported_at_once(nats):
    client = await Bus.connect(nats.url, name="client")
    try:
        client._link.since -= 60  # connected a minute ago: no core means no core
        with pytest.raises(CoreUnavailable) as caught:
            await client.request(command(), timeout_s=600)
        assert str(caught.value) == NOT_RUNNING
    finally:
        await client.close()


async def test_nats_down_for_longer_than_the_caller_waits_says_reconnecting(nats, answering):
    client = await Bus.connect(nats.url, name="client")
    try:
        nats.kill()
        with pytest.raises(Reconnecting) as caught:
            await client.request(command(), timeout_s=1.5)
        assert str(caught.value) == RECONNECTING and "not running" not in str(caught.value)
        nats.start()
    finally:
        await client.close()


async def test_a_file_larger_than_nats_carries_is_refused_before_it_is_sent(nats, answering):
    client = await Bus.connect(nats.url, name="client")
    try:
        with pytest.raises(PayloadTooLarge, match=r"This request is 2\.\d MB, more than the"):
            await client.request(command(CommandKind.SUBMIT, Attachment("big.py", b"x" * (2 << 20))))
        assert answering == []
    finally:
        await client.close()


async def test_a_job_published_while_nats_restarts_is_stored_once(nats, make_job):
    bus = await Bus.connect(nats.url, name="core")
    try:
        await bus.ensure_streams(["CPU"])
        job = make_job()
        nats.kill()
        publishing = asyncio.create_task(bus.publish_job(job))
        await asyncio.sleep(1.0)
        nats.start()
        await publishing  # stored (or found stored: the run id is the message id)
        info = await bus._js.stream_info(subjects.JOBS)
        assert info.state.messages == 1
    finally:
        await bus.close()


async def _ok(cmd: Command) -> Reply:
    return Reply(reply_to=cmd.reply_to, parts=[Part(PartKind.TEXT, text="ok")], in_reply_to=cmd.id)
