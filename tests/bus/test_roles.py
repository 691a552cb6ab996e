"""Each role on an authenticated bus (the server ``kernelrank up`` starts) does its work and nothing else.

Refusals are observed as NATS reports them: the server drops a denied publish or subscription and tells
the client with a permissions violation naming the subject. Each refusal test also sends one thing the
role may do, and checks that it is not reported, so a probe that reports everything cannot pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import stat
from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client
from worker_testkit import WORKER, hand_out_jobs

from core.contracts import signing, subjects
from core.contracts.bus import Bus, BusError, BusUnavailable, Role
from core.contracts.credentials import embedded_server_config
from core.contracts.messages import (
    Actor,
    Command,
    CommandKind,
    Part,
    PartKind,
    Platform,
    PoolStatus,
    Reply,
    ReplyTo,
    RunProgress,
    RunResult,
    Tone,
)
from core.contracts.roles import PERMISSIONS, inbox_prefix
from harness.result import EvalResult, Mode, Progress, Status

GPU = "CPU"
OTHERS = [Role.WORKER, Role.DISCORD, Role.SLACK, Role.API]
COMMAND_PLATFORMS = {Role.DISCORD: {"discord"}, Role.SLACK: {"slack"}, Role.API: {"cli", "web"}, Role.WORKER: set()}

# What only the core may read, whoever asks.
CORE_ONLY_SUBSCRIPTIONS = [
    "svc.command.*",
    "svc.command.cli",
    "svc.command.discord",
    "jobs.submit.CPU",
    "jobs.>",
    "jobs.dead.CPU",
    "runs.result.>",
    "runs.progress.r1",
    "replies.>",
    "replies.cli.s1",
    "replies.slack.>",
    "_INBOX.>",
    "_INBOX.core.>",
    ">",
]
# What only the core may do through the JetStream API or by publishing.
CORE_ONLY_PUBLISHES = [
    "$JS.API.STREAM.CREATE.SPY",
    "$JS.API.STREAM.UPDATE.JOBS",
    "$JS.API.STREAM.DELETE.JOBS",
    "$JS.API.STREAM.PURGE.EVENTS",
    "$JS.API.STREAM.MSG.DELETE.JOBS",
    "$JS.API.STREAM.MSG.GET.JOBS",
    "$JS.API.DIRECT.GET.JOBS",
    "$JS.API.DIRECT.GET.JOBS.jobs.submit.CPU",
    "$JS.API.STREAM.MSG.GET.JOBS_DLQ",
    "$JS.API.DIRECT.GET.EVENTS",
    "$JS.API.DIRECT.GET.EVENTS.runs.progress.r1",
    "$JS.API.STREAM.MSG.GET.EVENTS",
    "$JS.API.CONSUMER.CREATE.JOBS",
    "$JS.API.CONSUMER.CREATE.JOBS.spy.jobs.submit.CPU",
    "$JS.API.CONSUMER.CREATE.EVENTS.spy.runs.result.>",
    "$JS.API.CONSUMER.DELETE.JOBS.runners-CPU",
    "$JS.API.CONSUMER.DURABLE.CREATE.REPLIES.spy",
    "$JS.API.CONSUMER.CREATE.REPLIES",
    "jobs.submit.CPU",
    "jobs.dead.CPU",
    "replies.cli.someone",
    "replies.discord.C1",
]


def refused_for(role: Role) -> tuple[list[str], list[str]]:
    """(publish, subscribe) subjects ``role`` must be refused."""
    publish = [
        *CORE_ONLY_PUBLISHES,
        *(subjects.command_subject(p.value) for p in Platform if p.value not in COMMAND_PLATFORMS[role]),
    ]
    if role is not Role.WORKER:  # what a worker does (tests/bus/test_worker_credentials.py: each its own only)
        publish += [
            "$JS.API.CONSUMER.MSG.NEXT.JOBS.runners-CPU",
            "$JS.ACK.JOBS.runners-CPU.1.1.1.1.0",
            f"runs.result.{WORKER}.r1",
            f"runs.progress.{WORKER}.r1",
            f"pools.status.{WORKER}.CPU",
            "$KV.runner_calls.r1",
            f"$JS.API.DIRECT.GET.EVENTS.runs.result.{WORKER}.r1",
        ]
    for platform in (Platform.DISCORD, Platform.SLACK):  # one adapter's replies and ledger are its own
        if role.value != platform.value:
            durable = subjects.adapter_durable(platform.value)
            publish += [
                f"$JS.API.CONSUMER.MSG.NEXT.REPLIES.{durable}",
                f"$JS.API.CONSUMER.CREATE.REPLIES.{durable}.{subjects.platform_replies(platform.value)}",
                f"$JS.API.CONSUMER.CREATE.REPLIES.{durable}.replies.cli.>",
                f"$KV.{subjects.ledger_bucket(platform.value)}.k",
            ]
    if role is Role.API:
        publish += [
            "$JS.API.CONSUMER.CREATE.REPLIES.spy.replies.discord.>",
            "$JS.API.CONSUMER.CREATE.REPLIES.spy.replies.>",
        ]
    subscribe = [*CORE_ONLY_SUBSCRIPTIONS, *(f"{inbox_prefix(other)}.>" for other in Role if other is not role)]
    return publish, subscribe


# The core owns the streams, yet reports and commands are not its to make, nor other roles' inboxes its to read.
CORE_REFUSED = (
    [
        f"runs.result.{WORKER}.r1",
        f"runs.progress.{WORKER}.r1",
        "svc.command.cli",
        "svc.command.discord",
        f"pools.status.{WORKER}.CPU",
        "$KV.runner_calls.r1",
        "_INBOX.x",  # no role's inbox (the API's and the adapters' it may answer outright: a cluster node it moves
        # to mid-request does not know the answer is due)
    ],
    ["runs.result.>", "replies.>", "jobs.submit.CPU", "_INBOX.worker.>", "_INBOX.>", ">"],
)

ALLOWED = {
    Role.CORE: "replies.cli.probe",
    Role.WORKER: f"pools.status.{WORKER}.CPU",
    Role.DISCORD: "svc.command.discord",
    Role.SLACK: "svc.command.slack",
    Role.API: "svc.command.web",
}


class Probe:
    """A raw nats-py connection as one role, keeping the permission violations the server reports."""

    def __init__(self) -> None:
        self.nc = Client()
        self.violations: list[str] = []

    async def open(self, authed_nats, role: Role) -> Probe:
        async def on_error(exc: Exception) -> None:
            self.violations.append(str(exc))

        await self.nc.connect(
            authed_nats.url, error_cb=on_error, allow_reconnect=False, **authed_nats.credentials(role).connect_options()
        )
        return self

    def reported(self, action: str, subject: str) -> bool:
        wanted = f'violation for {action} to "{subject}"'.lower()  # nats-py lower-cases the server's words
        return any(wanted in v.lower() for v in self.violations)

    async def unreported(self, expected: list[tuple[str, str]], timeout_s: float = 5.0) -> list[tuple[str, str]]:
        """The expected (action, subject) violations still not reported after ``timeout_s``."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while (
            missing := [e for e in expected if not self.reported(*e)]
        ) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        return missing


@pytest.fixture
async def core(authed_nats) -> AsyncIterator[Bus]:
    bus = await authed_nats.connect(Role.CORE)
    await bus.ensure_streams([GPU], ack_wait_s=2, max_deliver=3)
    await hand_out_jobs(bus, [GPU], authed_nats.core_secret)
    yield bus
    await bus.close()


@contextlib.asynccontextmanager
async def probe(authed_nats, role: Role) -> AsyncIterator[Probe]:
    opened = await Probe().open(authed_nats, role)
    try:
        yield opened
    finally:
        await opened.nc.close()


async def echo(cmd: Command) -> Reply:
    return Reply(
        reply_to=cmd.reply_to, parts=[Part(PartKind.TEXT, text=f"hello {cmd.actor.user_id}")], in_reply_to=cmd.id
    )


def command(platform: Platform, reply_platform: Platform | None = None) -> Command:
    return Command(
        actor=Actor(platform, "u1"), reply_to=ReplyTo(reply_platform or platform, "route-1"), kind=CommandKind.LIST
    )


def reply(platform: Platform, route: str, text: str) -> Reply:
    return Reply(reply_to=ReplyTo(platform, route), parts=[Part(PartKind.TEXT, text=text)])


# ----- who may connect -----------------------------------------------------------------------------


async def test_a_client_without_the_right_credentials_cannot_connect(authed_nats) -> None:
    with pytest.raises(BusUnavailable, match="refused a connection without credentials"):
        await Bus.connect(authed_nats.url, "anonymous")
    wrong = authed_nats.credentials(Role.WORKER)
    with pytest.raises(BusUnavailable, match="refused the worker role's credentials"):
        await Bus.connect(authed_nats.url, "guessing", type(wrong)(Role.WORKER, user=wrong.user, password="guess"))
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await nats.connect(authed_nats.url, allow_reconnect=False, max_reconnect_attempts=0)


def test_credentials_are_owner_only_and_the_server_keeps_only_hashes(tmp_path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o755)
    config = embedded_server_config(secrets)
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700
    files = list(secrets.iterdir())
    assert {f.name for f in files} == {f"{role.value}.json" for role in PERMISSIONS} | {"nats.conf"}
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    text = config.read_text()
    users = json.loads(text)["authorization"]["users"]
    assert len(users) == len(PERMISSIONS) and all(u["password"].startswith("$2") for u in users)
    passwords = {role: json.loads((secrets / f"{role.value}.json").read_text())["password"] for role in PERMISSIONS}
    assert all(len(password) >= 40 and password not in text for password in passwords.values())
    assert len(set(passwords.values())) == len(PERMISSIONS)
    embedded_server_config(secrets)  # a restart keeps each role's password, with fresh hashes
    assert {
        role: json.loads((secrets / f"{role.value}.json").read_text())["password"] for role in PERMISSIONS
    } == passwords
    assert config.read_text() != text


# ----- what each role may not do -------------------------------------------------------------------


@pytest.mark.parametrize("role", OTHERS, ids=lambda r: r.value)
async def test_no_role_but_the_core_steps_outside_its_permissions(authed_nats, core: Bus, role: Role) -> None:
    await refused(authed_nats, role, *refused_for(role))


async def test_the_core_steps_outside_its_permissions_neither(authed_nats, core: Bus) -> None:
    await refused(authed_nats, Role.CORE, *CORE_REFUSED)


async def refused(authed_nats, role: Role, publish: list[str], subscribe: list[str]) -> None:
    """Send everything in ``publish`` and ``subscribe`` as ``role``; the server must refuse each, and nothing else."""
    async with probe(authed_nats, role) as p:
        for subject in publish:
            await p.nc.publish(subject, b"{}")
        for subject in subscribe:
            await p.nc.subscribe(subject)
        await p.nc.publish(ALLOWED[role], b"{}")  # allowed: must not be reported
        await p.nc.flush()
        missing = await p.unreported([("publish", s) for s in publish] + [("subscription", s) for s in subscribe])
        assert missing == []
        assert not p.reported("publish", ALLOWED[role])


@pytest.mark.slow
async def test_the_api_cannot_follow_another_platforms_replies(authed_nats, core: Bus) -> None:
    api = await authed_nats.connect(Role.API)
    async with probe(authed_nats, Role.API) as p:
        try:
            with pytest.raises(BusError):
                async with contextlib.aclosing(api.follow_replies("C1", Platform.DISCORD)) as replies:
                    await anext(replies)
            # the subject it may use, with a body asking for another filter: the server refuses the mismatch
            inbox = p.nc.new_inbox()
            sub = await p.nc.subscribe(inbox)
            body = {
                "stream_name": subjects.REPLIES,
                "config": {
                    "name": "spy",
                    "filter_subject": "replies.discord.>",
                    "deliver_subject": inbox,
                    "ack_policy": "none",
                    "deliver_policy": "all",
                },
            }
            await core.publish_reply(reply(Platform.DISCORD, "C1", "private"))
            answer = await p.nc.request(
                f"$JS.API.CONSUMER.CREATE.{subjects.REPLIES}.spy.replies.cli.>", json.dumps(body).encode(), timeout=5
            )
            assert "error" in json.loads(answer.data)
            with pytest.raises(nats.errors.TimeoutError):
                await sub.next_msg(timeout=0.5)
        finally:
            await api.close()


async def test_a_command_that_speaks_for_another_platforms_user_is_refused(authed_nats, core: Bus, raw_request) -> None:
    handled: list[Command] = []

    async def handler(cmd: Command) -> Reply:
        handled.append(cmd)
        return await echo(cmd)

    await core.serve_commands(handler)
    discord = await authed_nats.connect(Role.DISCORD)
    async with probe(authed_nats, Role.DISCORD) as p:
        try:
            from core.contracts.messages import decode, encode

            with_token = command(Platform.DISCORD)
            with_token.credential_sha256 = "0" * 64  # only the API process may speak for a token
            for claimed in (
                command(Platform.CLI, Platform.DISCORD),
                command(Platform.DISCORD, Platform.SLACK),
                with_token,
            ):
                raw = await raw_request(p.nc, subjects.command_subject("discord"), encode(claimed))
                answer = decode(Reply, raw.data)
                assert answer.tone is Tone.ERROR and "refuses" in answer.parts[0].text
            assert handled == []
            assert (await discord.request(command(Platform.DISCORD))).parts[0].text == "hello u1"
            assert len(handled) == 1
        finally:
            await discord.close()


# ----- what each role does -------------------------------------------------------------------------


async def test_a_worker_does_its_work(authed_nats, core: Bus, make_job) -> None:
    results: list[RunResult] = []
    progress: list[RunProgress] = []
    statuses: list[PoolStatus] = []

    async def on_results(batch: list[RunResult]) -> None:
        results.extend(batch)

    async def on_progress(batch: list[RunProgress]) -> None:
        progress.extend(batch)

    async def on_status(status: PoolStatus) -> None:
        statuses.append(status)

    await core.consume_results(on_results, poll_s=0.2)
    await core.consume_progress(on_progress, poll_s=0.2)
    await core.watch_pool_status(on_status)
    job = make_job()
    assert await core.publish_job(job)
    worker = await authed_nats.connect(Role.WORKER)
    try:
        queue = await worker.jobs(GPU)
        (delivery,) = await queue.fetch(timeout_s=5)
        key = delivery.message.result_key  # the core's key for this attempt, for this worker's hands only
        assert key == signing.attempt_key(signing.run_key(authed_nats.core_secret, job.run_id), 1)
        await delivery.in_progress()
        await worker.publish_progress(RunProgress(job.run_id, 1, GPU, Progress(stage="started"), worker=WORKER), key)
        passed = EvalResult(status=Status.PASSED, mode=Mode.TEST, problem="identity")
        await worker.publish_result(RunResult(job.run_id, 1, GPU, passed, worker=WORKER), key)
        await worker.publish_pool_status(PoolStatus(gpu=GPU, worker=WORKER, backend="fake", running=1, capacity=1))
        await delivery.ack()
        calls = await worker.runner_calls()
        await calls.put(job.run_id, {"call": "fc-1"})
        assert await calls.get(job.run_id) == {"call": "fc-1"}
        await calls.delete(job.run_id)
        assert await calls.get(job.run_id) is None
        await queue.close()
        for _ in range(200):
            if results and progress and statuses:
                break
            await asyncio.sleep(0.05)
        assert [r.run_id for r in results] == [job.run_id] and results[0].signature
        assert [p.run_id for p in progress] == [job.run_id]
        assert statuses[0].worker == WORKER
    finally:
        await worker.close()


@pytest.mark.parametrize("role", [Role.DISCORD, Role.SLACK], ids=lambda r: r.value)
async def test_a_chat_adapter_does_its_work(authed_nats, core: Bus, role: Role) -> None:
    platform = Platform(role.value)
    await core.serve_commands(echo)
    adapter = await authed_nats.connect(role)
    got: list[Reply] = []

    async def on_replies(batch: list[Reply]) -> None:
        got.extend(batch)

    try:
        assert (await adapter.request(command(platform))).parts[0].text == "hello u1"
        await core.publish_reply(reply(platform, "C1", "for me"))
        await core.publish_reply(reply(Platform.CLI, "C1", "not for me"))
        await adapter.consume_replies(platform, on_replies, poll_s=0.2)
        for _ in range(200):
            if got:
                break
            await asyncio.sleep(0.05)
        assert [r.parts[0].text for r in got] == ["for me"]
        ledger = await adapter.ledger(subjects.ledger_bucket(platform.value))
        assert await ledger.claim("event-1") is True
        assert await ledger.claim("event-1") is False
        await ledger.put("message-1", b"ts-1")
        assert await ledger.get("message-1") == b"ts-1"
    finally:
        await adapter.close()


async def test_the_api_does_its_work(authed_nats, core: Bus) -> None:
    await core.serve_commands(echo)
    api = await authed_nats.connect(Role.API)
    try:
        for platform in (Platform.CLI, Platform.WEB):
            assert (await api.request(command(platform))).parts[0].text == "hello u1"
            await core.publish_reply(reply(platform, "s1", "stored"))
            seen: list[str] = []
            async with contextlib.aclosing(api.follow_replies("s1", platform)) as replies:
                async for answer in replies:
                    seen.append(answer.parts[0].text)
                    if len(seen) == 1:
                        await core.publish_reply(reply(platform, "s1", "live"))
                    else:
                        break
            assert seen == ["stored", "live"]
    finally:
        await api.close()
