"""Connecting, request-reply with the core, job publishing, stream set-up and reply following."""

import asyncio
import contextlib

import nats
import pytest
from nats.js.api import StreamConfig

from core.contracts import subjects
from core.contracts.bus import Bus, BusError, BusUnavailable, CoreUnavailable, _follow
from core.contracts.messages import Actor, Command, CommandKind, Part, PartKind, Platform, Reply, ReplyTo, Tone, encode


def command(kind: CommandKind = CommandKind.LIST) -> Command:
    return Command(actor=Actor(Platform.CLI, "ada"), reply_to=ReplyTo(Platform.CLI, "s1"), kind=kind)


def reply(route: str, text: str, platform: Platform = Platform.CLI) -> Reply:
    return Reply(reply_to=ReplyTo(platform, route), parts=[Part(PartKind.TEXT, text=text)])


async def echo(cmd: Command) -> Reply:
    return Reply(
        reply_to=cmd.reply_to, parts=[Part(PartKind.TEXT, text=f"you asked {cmd.kind.value}")], in_reply_to=cmd.id
    )


async def test_connecting_to_nothing_says_so() -> None:
    with pytest.raises(BusUnavailable, match="cannot reach NATS at nats://127.0.0.1:1"):
        await Bus.connect("nats://127.0.0.1:1", name="nobody")


async def test_request_without_a_core_fails_at_once(bus: Bus) -> None:
    # The timeout is far beyond the test's patience: the answer must come from no-responders, not the clock.
    with pytest.raises(CoreUnavailable, match="not running"):
        await asyncio.wait_for(bus.request(command(), timeout_s=600), 30)


async def test_request_reaches_the_core(bus: Bus, nats_url: str) -> None:
    core = await Bus.connect(nats_url, name="core")
    try:
        await core.serve_commands(echo)
        cmd = command(CommandKind.SHOW)
        answer = await bus.request(cmd)
        assert answer.in_reply_to == cmd.id
        assert answer.parts[0].text == "you asked show"
    finally:
        await core.close()


async def test_a_stopped_command_server_no_longer_answers(bus: Bus, nats_url: str) -> None:
    core = await Bus.connect(nats_url, name="core")
    try:
        server = await core.serve_commands(echo)
        await server.stop()
        with pytest.raises(CoreUnavailable):
            await bus.request(command())
    finally:
        await core.close()


async def test_unreadable_requests_and_failing_handlers_get_error_replies(bus: Bus, nats_url: str, raw_request) -> None:
    async def broken(cmd: Command) -> Reply:
        raise RuntimeError("boom")

    core = await Bus.connect(nats_url, name="core")
    nc = await nats.connect(nats_url)
    try:
        await core.serve_commands(broken)
        for payload in (b"not json", b'{"v": 1, "kind": "list"}', b'{"v": 99}'):
            raw = await raw_request(nc, subjects.command_subject("cli"), payload)
            assert b'"tone":"error"' in raw.data
        answer = await bus.request(command())
        assert answer.tone is Tone.ERROR
        assert "went wrong" in answer.parts[0].text
        assert (await bus.request(command())).tone is Tone.ERROR  # still serving after all that
    finally:
        await nc.close()
        await core.close()


async def test_commands_are_handled_concurrently(bus: Bus, nats_url: str) -> None:
    both_inside = asyncio.Barrier(2)

    async def waits_for_the_other(cmd: Command) -> Reply:
        await both_inside.wait()  # deadlocks if the server ran one handler at a time
        return await echo(cmd)

    core = await Bus.connect(nats_url, name="core")
    try:
        await core.serve_commands(waits_for_the_other)
        answers = await asyncio.gather(bus.request(command()), bus.request(command()))
        assert all(a.tone is not Tone.ERROR for a in answers)
    finally:
        await core.close()


async def test_a_job_published_twice_is_stored_once(bus: Bus, make_job, count) -> None:
    job = make_job()
    assert await bus.publish_job(job) is True
    assert await bus.publish_job(job) is False
    assert await count(subjects.JOBS) == 1
    assert await bus.publish_job(make_job()) is True
    assert await count(subjects.JOBS) == 2


async def test_ensure_streams_is_idempotent_and_updates_the_pools(bus: Bus, js) -> None:
    await js.update_stream(
        StreamConfig(name=subjects.EVENTS, subjects=[subjects.PROGRESS_ALL, subjects.RESULTS_ALL], max_age=60)
    )
    await bus.ensure_streams(["CPU", "H100"], ack_wait_s=7, max_deliver=3, concurrency={"H100": 4})
    await bus.ensure_streams(["CPU", "H100"], ack_wait_s=9, max_deliver=3, concurrency={"H100": 2})
    info = await js.consumer_info(subjects.JOBS, subjects.runner_durable("H100"))
    assert info.config.ack_wait == 9
    assert info.config.max_ack_pending == 2
    assert info.config.filter_subject == "jobs.submit.H100"
    names = {s.config.name for s in await js.streams_info()}
    assert {subjects.JOBS, subjects.JOBS_DLQ, subjects.EVENTS, subjects.REPLIES} <= names
    assert (await js.stream_info(subjects.EVENTS)).config.max_age == 24 * 3600  # an old setting brought back


async def test_publishing_before_the_streams_exist_says_what_is_missing(nats_url: str, make_job) -> None:
    early = await Bus.connect(nats_url, name="early")
    try:
        with pytest.raises(BusError, match="core creates them"):
            await early.publish_job(make_job())
    finally:
        await early.close()


async def test_follow_replies_replays_then_follows_one_route(bus: Bus) -> None:
    await bus.publish_reply(reply("me", "first"))
    await bus.publish_reply(reply("someone-else", "not mine"))
    await bus.publish_reply(reply("me", "second"))
    await bus.publish_reply(reply("me", "other platform", Platform.SLACK))
    seen: list[str] = []
    async with contextlib.aclosing(bus.follow_replies("me")) as replies:
        async for answer in replies:
            seen.append(answer.parts[0].text)
            if len(seen) == 2:
                await bus.publish_reply(reply("me", "live"))
            if len(seen) == 3:
                break
    assert seen == ["first", "second", "live"]


async def test_an_adapter_consumes_every_reply_of_its_platform(bus: Bus) -> None:
    await bus.publish_reply(reply("C1", "to channel one", Platform.SLACK))
    await bus.publish_reply(reply("me", "for the terminal"))
    await bus.publish_reply(reply("C2", "to channel two", Platform.SLACK))
    got: list[str] = []
    both = asyncio.Event()

    async def post(replies: list[Reply]) -> None:
        got.extend(r.parts[0].text for r in replies)
        if len(got) == 2:
            both.set()

    async with await bus.consume_replies(Platform.SLACK, post, poll_s=0.2):
        await asyncio.wait_for(both.wait(), 10)
    assert got == ["to channel one", "to channel two"]


async def test_a_repeated_reply_is_stored_once(bus: Bus, count) -> None:
    answer = reply("me", "once")
    await bus.publish_reply(answer)
    await bus.publish_reply(answer)
    assert await count(subjects.REPLIES) == 1


async def test_follow_replies_skips_unreadable_ones(bus: Bus, js) -> None:
    await js.publish(subjects.reply_subject("cli", "me"), b"garbage")
    await js.publish(subjects.reply_subject("cli", "me"), encode(reply("me", "fine")))
    async with contextlib.aclosing(bus.follow_replies("me")) as replies:
        first = await anext(replies)
    assert first.parts[0].text == "fine"


async def test_close_ends_an_abandoned_follow(nats_url: str) -> None:
    client = await Bus.connect(nats_url, name="client")
    await client.ensure_streams([])
    await client.publish_reply(reply("me", "hello"))
    async for _ in client.follow_replies("me"):
        break  # abandoned without aclose(), as a careless caller would
    await client.close()  # must not hang or leave the ordered consumer running


async def test_closing_the_bus_ends_a_follow_in_progress(nats_url: str) -> None:
    client = await Bus.connect(nats_url, name="client")
    await client.ensure_streams([])
    await client.publish_reply(reply("me", "hello"))
    seen: list[str] = []
    first = asyncio.Event()

    async def follow() -> None:
        async for answer in client.follow_replies("me"):
            seen.append(answer.parts[0].text)
            first.set()

    task = asyncio.create_task(follow())
    await asyncio.wait_for(first.wait(), 10)  # now waiting for the next reply
    await client.close()
    await asyncio.wait_for(task, 10)  # ended, not failed
    assert seen == ["hello"]


@pytest.mark.slow
async def test_a_follower_cancelled_as_a_heartbeat_arrives_still_stops(bus: Bus, monkeypatch) -> None:
    """``wait_for(anext(follower), t)`` must end even when the cancellation meets an idle heartbeat."""
    monkeypatch.setattr(_follow, "HEARTBEAT_S", 0.1)
    await bus.publish_reply(reply("me", "stored"))
    for _ in range(30):
        follower = bus.follow_replies("me")
        assert (await anext(follower)).parts[0].text == "stored"
        waiting = asyncio.create_task(asyncio.wait_for(anext(follower), 0.1))  # nothing more comes: times out
        done, _ = await asyncio.wait({waiting}, timeout=10)
        assert waiting in done, "the follower ignored its cancellation"
        assert isinstance(waiting.exception(), TimeoutError)
        await follower.aclose()
