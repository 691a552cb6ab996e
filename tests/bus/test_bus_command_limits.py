"""The command server's limits: a reply NATS cannot carry is fitted, never dropped; a public read whose asker has
stopped waiting is not worked on, while a submission always is."""

from __future__ import annotations

import asyncio

import pytest

from core.contracts.bus import Bus, CoreUnavailable
from core.contracts.messages import Actor, Command, CommandKind, Part, PartKind, Platform, Reply, ReplyTo, encode


def command(kind: CommandKind) -> Command:
    return Command(actor=Actor(Platform.CLI, "ada"), reply_to=ReplyTo(Platform.CLI, "s1"), kind=kind)


async def test_a_reply_over_the_payload_limit_arrives_fitted(bus: Bus, nats_url: str) -> None:
    async def huge(cmd: Command) -> Reply:
        points = [["2026-01-01T00:00:00+00:00", float(i)] for i in range(60_000)]  # a person page's series, unthinned
        return Reply(
            reply_to=cmd.reply_to,
            parts=[Part(PartKind.TEXT, text="x" * (3 << 20))],
            data={"progress": [{"points": points}]},
            in_reply_to=cmd.id,
        )

    assert len(encode(await huge(command(CommandKind.PERSON)))) > bus.max_payload
    core = await Bus.connect(nats_url, name="core")
    try:
        await core.serve_commands(huge)
        cmd = command(CommandKind.PERSON)
        answer = await bus.request(cmd, timeout_s=30)
        assert answer.in_reply_to == cmd.id and len(encode(answer)) <= bus.max_payload
        assert "cut to fit the message limit" in answer.parts[0].text
        assert 0 < len(answer.data["progress"][0]["points"]) < 60_000
    finally:
        await core.close()


async def test_an_abandoned_read_is_not_worked_on_but_a_submission_is(bus: Bus, nats_url: str, eventually) -> None:
    release = asyncio.Event()
    worked_on: list[CommandKind] = []

    async def one_at_a_time(cmd: Command) -> Reply:
        worked_on.append(cmd.kind)
        if cmd.kind is CommandKind.STATS:
            await release.wait()  # holds the server's only slot
        return Reply(reply_to=cmd.reply_to, parts=[Part(PartKind.TEXT, text="done")], in_reply_to=cmd.id)

    core = await Bus.connect(nats_url, name="core")
    try:
        await core.serve_commands(one_at_a_time, max_in_flight=1)
        holder = asyncio.create_task(bus.request(command(CommandKind.STATS), timeout_s=30))

        async def holding() -> bool:
            return worked_on == [CommandKind.STATS]

        async def submitted() -> bool:
            return CommandKind.SUBMIT in worked_on

        await eventually(holding)
        with pytest.raises(CoreUnavailable):  # waits behind the holder, then gives up
            await bus.request(command(CommandKind.SHOW), timeout_s=0.3)
        submission = asyncio.create_task(bus.request(command(CommandKind.SUBMIT), timeout_s=0.3))
        with pytest.raises(CoreUnavailable):
            await submission
        release.set()
        await holder
        await eventually(submitted)  # commands are taken in order: the show, sent before, was decided already
        assert worked_on == [CommandKind.STATS, CommandKind.SUBMIT]
    finally:
        await core.close()
