"""The core's replies posted to Slack: progress in place, reports once, durable across restarts.

Real NATS (the delivery ledger is a JetStream key-value bucket), the adapter's real Web API client, and
the fake Slack recording what arrives.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import pytest

from adapters.slack.app import web_client
from adapters.slack.poster import Poster, SlackUnavailable
from adapters.slack.replies import ReplyDelivery
from core.contracts import reply_parts, subjects
from core.contracts.bus import Bus
from core.contracts.messages import Part, PartKind, Platform, Reply, ReplyTo, Tone
from harness.result import Progress
from tests.adapters.slack.slack_kit import config_for, running_slack, settled
from tests.fakes.slack import FakeSlack

THREAD = "1700000000.000100"
TO = ReplyTo(platform=Platform.SLACK, channel="C0GENERAL", thread=THREAD, user="U0ALICE")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[Bus]:
    connected = await Bus.connect(nats_url, name="replies-test")
    await connected.ensure_streams([])
    yield connected
    await connected.close()


@pytest.fixture
async def delivery(bus: Bus, fake: FakeSlack) -> tuple[ReplyDelivery, Clock]:
    clock = Clock()
    ledger = await bus.ledger(subjects.ledger_bucket("slack"), 3600)
    return ReplyDelivery(Poster(web_client(config_for(fake))), ledger, clock=clock), clock


def progress(stage: str, index: int = 0, total: int = 0, run: str = "run1") -> Reply:
    return reply_parts.progress_reply(TO, run, "H100", Progress(stage=stage, index=index, total=total))


def final(run: str = "run1", *, chart: bool = False) -> Reply:
    parts = [
        Part(kind=PartKind.MENTION, text="U0ALICE"),
        reply_parts.status("ranked passed", Tone.SUCCESS),
        reply_parts.text("**Score** 12.5 µs"),
    ]
    if chart:
        parts.append(
            reply_parts.chart(
                "Best", "when", "µs", [("H100", "2026-01-01T00:00:00", 3.0), ("H100", "2026-01-02T00:00:00", 2.0)]
            )
        )
    return Reply(
        reply_to=TO,
        parts=parts,
        tone=Tone.SUCCESS,
        title="Submission #7 to vectoradd on H100",
        in_reply_to=run,
        update_key=run,
        id=f"result-{run}",
        data={
            "submission_id": 7,
            "run_id": run,
            "score_us": 12.5,
            "leaderboard": "vectoradd",
            "gpu": "H100",
            "mode": "ranked",
        },
    )


async def test_progress_is_edited_in_place_then_closed_by_the_report(delivery, fake):
    deliver, clock = delivery
    await deliver.deliver([progress("testing", 1, 3)])
    (first,) = fake.calls_to("chat.postMessage")
    assert first.params["thread_ts"] == THREAD and "testing 1 of 3" in first.params["text"]
    ((_, ts),) = fake.messages

    clock.now += 0.2
    await deliver.deliver([progress("testing", 2, 3)])  # within a second of the last edit: skipped
    assert fake.calls_to("chat.update") == []
    clock.now += 2
    await deliver.deliver([progress("timing", 1, 5)])
    (edit,) = fake.calls_to("chat.update")
    assert edit.params["ts"] == ts and "timing 1 of 5" in edit.params["text"]

    await deliver.deliver([final()])
    posts = fake.calls_to("chat.postMessage")
    assert len(posts) == 2 and posts[1].params["thread_ts"] == THREAD
    assert posts[1].params["text"].startswith("<@U0ALICE>")
    closing = fake.calls_to("chat.update")[-1]
    assert closing.params["ts"] == ts and closing.params["text"].endswith("ranked passed, score 12.5 µs")

    clock.now += 10
    await deliver.deliver([progress("timing", 5, 5)])  # late: never after the report
    assert [c.method for c in fake.calls] == ["chat.postMessage", "chat.update", "chat.postMessage", "chat.update"]


async def test_a_redelivered_report_is_posted_once(delivery, fake):
    deliver, _ = delivery
    await deliver.deliver([final()])
    await deliver.deliver([final()])
    assert len(fake.calls_to("chat.postMessage")) == 1


async def test_slack_down_keeps_the_batch_but_not_what_was_posted(delivery, fake):
    deliver, _ = delivery
    other = ReplyTo(platform=Platform.SLACK, channel="C0OTHER", thread=THREAD, user="U0BOB")
    second = Reply(reply_to=other, parts=[reply_parts.text("hello")], title="Second", id="second")
    fake.fail("chat.postMessage", "service_unavailable", channel="C0OTHER")
    with pytest.raises(SlackUnavailable):
        await deliver.deliver([final(), second])
    await deliver.deliver([final(), second])  # the redelivered batch
    posted = [c.params["channel"] for c in fake.calls_to("chat.postMessage")]
    assert posted == ["C0GENERAL", "C0OTHER", "C0OTHER"]


async def test_rate_limits_are_waited_out(delivery, fake):
    deliver, _ = delivery
    fake.fail("chat.postMessage", "ratelimited", status=429, retry_after=0)
    await deliver.deliver([final()])
    assert len(fake.calls_to("chat.postMessage")) == 2


async def test_a_channel_closed_to_the_bot_gets_the_person_a_direct_message(delivery, fake):
    deliver, _ = delivery
    fake.deny_channel("C0GENERAL")
    await deliver.deliver([final()])
    (opened,) = fake.calls_to("conversations.open")
    assert opened.params["users"] == "U0ALICE"
    refused, dm = fake.calls_to("chat.postMessage")
    assert refused.params["channel"] == "C0GENERAL" and dm.params["channel"] == "D0ALICE"
    assert "thread_ts" not in dm.params and "invite me" in str(dm.params["blocks"][0])


async def test_ephemeral_announcement_and_refused_replies(delivery, fake):
    deliver, _ = delivery
    error = reply_parts.error_reply(TO, "This run failed 3 times; check the kernel for hangs.")
    announcement = Reply(
        reply_to=ReplyTo(platform=Platform.SLACK, channel="C0CHALLENGE", thread="ignored"),
        title="New top 3 on vectoradd / H100",
        parts=[reply_parts.table(["rank", "who"], [["1", "Ada"]])],
        data={"kind": "announcement", "leaderboard": "vectoradd", "gpu": "H100", "top": [[1, "Ada", 9]]},
    )
    fake.fail("chat.postMessage", "channel_not_found", channel="C0GONE")
    gone = Reply(reply_to=ReplyTo(platform=Platform.SLACK, channel="C0GONE"), parts=[reply_parts.text("x")], id="gone")
    await deliver.deliver([error, announcement, gone])  # nothing to retry: no exception
    (ephemeral,) = fake.calls_to("chat.postEphemeral")
    assert ephemeral.params["user"] == "U0ALICE" and ephemeral.params["thread_ts"] == THREAD
    (posted,) = fake.calls_to("chat.postMessage", channel="C0CHALLENGE")
    assert "thread_ts" not in posted.params


async def test_charts_go_into_the_thread_through_upload_v2(delivery, fake):
    deliver, _ = delivery
    await deliver.deliver([final(chart=True)])
    (url,) = fake.calls_to("files.getUploadURLExternal")
    assert url.params["filename"].endswith(".png") and int(url.params["length"]) > 0
    (sent,) = fake.calls_to("file.upload")
    assert sent.params["bytes"] == int(url.params["length"])
    (done,) = fake.calls_to("files.completeUploadExternal")
    assert done.params["channel_id"] == "C0GENERAL" and done.params["thread_ts"] == THREAD
    assert fake.uploads[sent.params["file_id"]]["content"].startswith(b"\x89PNG")


async def test_a_deleted_progress_message_is_posted_again(delivery, fake):
    deliver, clock = delivery
    await deliver.deliver([progress("testing", 1, 3)])
    fake.messages.clear()  # someone deleted it
    clock.now += 5
    await deliver.deliver([progress("timing", 1, 5)])
    assert [c.method for c in fake.calls] == ["chat.postMessage", "chat.update", "chat.postMessage"]


async def test_replies_wait_for_a_stopped_adapter_and_are_posted_once_after_restart(nats_url, bus, fake):
    async with running_slack(nats_url, fake):
        await bus.publish_reply(progress("testing", 1, 3))
        await fake.wait_for("chat.postMessage")
    ((_, progress_ts),) = fake.messages
    await bus.publish_reply(final())  # while no adapter runs
    assert len(fake.calls_to("chat.postMessage")) == 1
    async with running_slack(nats_url, fake):
        await settled(bus, fake)
    async with running_slack(nats_url, fake):  # a third start posts nothing again
        await settled(bus, fake)
    posts = [c for c in fake.calls_to("chat.postMessage") if c.params["channel"] == "C0GENERAL"]
    (closing,) = fake.calls_to("chat.update")
    assert len(posts) == 2 and posts[1].params["text"].startswith("<@U0ALICE>")
    assert closing.params["ts"] == progress_ts  # the line posted before the restart


async def test_what_only_its_reader_may_see_never_reaches_the_log(nats_url, bus, fake, caplog):
    caplog.set_level(logging.DEBUG)
    secret = "krt_live_5f1e0c9a8b7d6e5f4a3b2c1d"
    token = Reply(reply_to=TO, ephemeral=True, title="Your personal token", parts=[reply_parts.code(secret)])
    async with running_slack(nats_url, fake):
        await bus.publish_reply(token)
        (shown,) = await fake.wait_for("chat.postEphemeral")
    assert secret in str(shown.params["blocks"])
    assert secret not in caplog.text and fake.bot_token not in caplog.text
