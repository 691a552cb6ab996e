"""Private details, public verdicts: a result's per-shape figures, test messages and the kernel's output reach its
author alone, in Discord (a private thread) and Slack (an ephemeral message in the thread), through the real bot,
the real Bolt app, the fakes, a real core, NATS and DuckDB; everyone sees the verdict, the score and the rank."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, CommandKind, Platform, ReplyTo
from harness.job import EvalJob
from harness.result import EvalResult, Failure, FailureKind, ShapeStats, Status
from harness.result import TestResult as Checked
from runners.fake import FakeRunner, passed_result
from tests.adapters.discord.discord_testkit import CORRECT, start_bot
from tests.adapters.slack.slack_kit import fake_workspace, running_slack
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord import objects as o
from tests.fakes.discord import payloads as discord_payloads

SHAPE = "size=777123"  # how the per-shape table names the shape
CHECKER = "mismatch at index 5: checker-says-so"
PRINTED = "printed-by-the-kernel"
SECRETS = (SHAPE, "95% CI", CHECKER, PRINTED)
WRONG = CORRECT + b"\n# wrong\n"


def result_for(job: EvalJob) -> EvalResult:
    """A passing run with a per-shape table and output; a failing one (``# wrong``) with a checker message."""
    if "# wrong" in job.submission_source:
        return EvalResult(
            status=Status.FAILED,
            mode=job.mode,
            problem=job.problem.name,
            stdout=PRINTED,
            tests=[Checked(spec={"size": 777123}, passed=False, message=CHECKER)],
            failure=Failure(FailureKind.WRONG_OUTPUT, f"Test size=777123 failed: {CHECKER}"),
        )
    result = passed_result(job)
    result.stdout = PRINTED
    result.shapes = [
        ShapeStats(
            spec={"size": 777123},
            n=100,
            median_us=42.0,
            mean_us=42.5,
            trimmed_mean_us=42.2,
            std_us=0.5,
            ci_low_us=41.9,
            ci_high_us=42.1,
            min_us=41.0,
            p10_us=41.5,
            p90_us=43.0,
            max_us=50.0,
            first_call_us=90.0,
        )
    ]
    return result


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(callback_deadline_s=10.0)
    await fake.start()
    yield fake
    await fake.stop()


def secrets_in(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


async def eventually(check, timeout_s: float = 30.0):
    for _ in range(int(timeout_s / 0.1)):
        if found := check():
            return found
        await asyncio.sleep(0.1)
    raise AssertionError("timed out waiting")


async def test_discord_says_so_when_neither_a_private_thread_nor_a_direct_message_takes_the_details(
    make_system, fake_discord
):
    fake_discord.private_threads_allowed = False  # the invite lacked Create Private Threads
    fake_discord.closed_dms.add(discord_payloads.ADA["id"])
    system = await make_system(FakeRunner(result_for=result_for))
    bot = await start_bot(fake_discord, system)
    try:
        await bot.submit(CORRECT, leaderboard="vectoradd")
        told = await eventually(
            lambda: [m for m in fake_discord.messages.values() if "could not send you the details" in json.dumps(m)]
        )
        assert f"<@{discord_payloads.ADA['id']}>" in json.dumps(told) and "submission 1` shows them" in json.dumps(told)
        everything = json.dumps(list(fake_discord.messages.values()), ensure_ascii=False)
        assert not secrets_in(everything)  # the details went nowhere public
    finally:
        bot.stop.set()
        await bot.task


async def test_discord_shows_the_verdict_in_the_thread_and_the_details_in_a_private_thread(make_system, fake_discord):
    system = await make_system(FakeRunner(result_for=result_for))
    bot = await start_bot(fake_discord, system)
    try:
        for source in (CORRECT, WRONG):
            await bot.submit(source, leaderboard="vectoradd")

        def private_threads() -> list[str]:
            threads = [c for c, ch in fake_discord.channels.items() if ch.get("type") == o.PRIVATE_THREAD]
            return threads if len(threads) == 2 and all(fake_discord.channel_messages(t) for t in threads) else []

        threads = await eventually(private_threads)
        await eventually(
            lambda: (
                len(
                    [
                        m
                        for m in fake_discord.messages.values()
                        if "ranked" in json.dumps(m)
                        and fake_discord.channels.get(m["channel_id"], {}).get("type") == o.PUBLIC_THREAD
                    ]
                )
                >= 2
            )
        )
        ada = discord_payloads.ADA["id"]
        private = {t: json.dumps(fake_discord.channel_messages(t), ensure_ascii=False) for t in threads}
        assert all(f"<@{ada}>" in text for text in private.values())  # mentioning adds the author
        assert set(secrets_in("".join(private.values()))) == set(SECRETS)
        for message in fake_discord.messages.values():
            if message["channel_id"] in threads or message["flags"] & (1 << 6):
                continue
            text = json.dumps(message, ensure_ascii=False)
            assert not secrets_in(text), (secrets_in(text), message["content"])
        everyone = json.dumps(
            [m for m in fake_discord.messages.values() if m["channel_id"] not in threads], ensure_ascii=False
        )
        assert "ranked passed" in everyone and "ranked failed" in everyone and "Rank #1" in everyone
        assert "went to you privately" in everyone
        assert {c.json.get("type") for c in fake_discord.calls_to("POST", "/channels/{channel}/threads")} == {12}
    finally:
        bot.stop.set()
        await bot.task


async def test_slack_shows_the_details_to_the_author_alone_and_submission_id_to_no_one_else(make_system):
    system = await make_system(FakeRunner(result_for=result_for))
    ada = Actor(Platform.SLACK, "U0ALICE", "Ada Lovelace")
    with fake_workspace() as fake:
        async with running_slack(system.settings.nats_url, fake):
            ids = []
            for source in (CORRECT, WRONG):
                where = ReplyTo(Platform.SLACK, "C0GENERAL", thread="1700000000.000100", user="U0ALICE")
                accepted = await system.bus.request(
                    submit_command(ada, where, "k.py", source, leaderboard="vectoradd"), timeout_s=10
                )
                ids.append(accepted.data["submission_id"])
            ephemeral = await fake.wait_for("chat.postEphemeral", count=2)
            await eventually(
                lambda: len([c for c in fake.calls_to("chat.postMessage") if "ranked" in c.params.get("text", "")]) >= 2
            )
            private = json.dumps([c.params for c in ephemeral], ensure_ascii=False)
            assert set(secrets_in(private)) == set(SECRETS)
            assert {c.params["user"] for c in ephemeral} == {"U0ALICE"}
            assert {c.params.get("thread_ts") for c in ephemeral} == {"1700000000.000100"}
            for call in fake.calls:
                if call.method != "chat.postEphemeral":
                    assert not secrets_in(json.dumps(call.params, ensure_ascii=False)), call.method

    # `submission ID`: the author sees everything, someone else only the verdict and the score.
    def asked(user: str) -> ReplyTo:
        return query_command(
            Actor(Platform.SLACK, user, user),
            ReplyTo(Platform.SLACK, "C0GENERAL"),
            CommandKind.SUBMISSION,
            id=str(ids[1]),
        )

    mine = await system.bus.request(asked("U0ALICE"), timeout_s=10)
    theirs = await system.bus.request(asked("U0BOB"), timeout_s=10)
    assert set(secrets_in(json.dumps(mine.parts, default=str))) >= {CHECKER, PRINTED}
    assert "ranked failed" in json.dumps(theirs.parts, default=str)
    assert not secrets_in(json.dumps(theirs.parts, default=str)) and "def custom_kernel" not in str(theirs.parts)
