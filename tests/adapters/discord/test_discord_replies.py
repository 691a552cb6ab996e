"""What the core publishes for Discord, posted by the bot: announcements, late threads, repeats, long reports."""

from __future__ import annotations

import nats
from discord_testkit import CORRECT, texts

from adapters.discord.replies import latest_only
from core.contracts import reply_parts, subjects
from core.contracts.messages import Part, PartKind, Platform, Reply, ReplyTo, Tone, encode
from runners.fake import FakeRunner
from tests.fakes.discord import objects as o
from tests.fakes.discord import payloads


async def test_a_new_top_3_is_announced_with_medals(make_system, make_bot):
    system = await make_system(FakeRunner(), announce=[f"discord:{o.ANNOUNCE_CHANNEL}"])
    bot = await make_bot(system)
    await bot.answer(await bot.submit(CORRECT, leaderboard="vectoradd"))
    (news,) = await bot.fake.wait_for(lambda f: f.channel_messages(o.ANNOUNCE_CHANNEL))
    embed = news["embeds"][0]
    assert embed["title"] == "🏆 New top 3 on vectoradd (CPU)"
    assert "🥇 **Ada** · " in embed["description"] and "is now #1 on **vectoradd**" in embed["description"]
    assert "message_reference" not in news and not news["content"]  # a plain message, no thread


def run_report(reply_to: ReplyTo, run_id: str = "r1", text: str = "ranked passed") -> Reply:
    return Reply(
        reply_to=reply_to,
        parts=[reply_parts.status(text, Tone.SUCCESS)],
        tone=Tone.SUCCESS,
        title="Submission #7 to vectoradd on CPU",
        in_reply_to=run_id,
        update_key=run_id,
        data={"gpu": "CPU", "run_id": run_id},
        id=f"result-{run_id}",
    )


async def test_a_report_whose_thread_was_never_opened_opens_it(make_system, make_bot):
    system = await make_system(FakeRunner())
    bot = await make_bot(system)
    status = bot.fake.new_message(o.KERNELS_CHANNEL, {"content": "📥 **Ada** · submission #7\n⏳ CPU: queued"}, [])
    to = ReplyTo(
        Platform.DISCORD, channel=o.KERNELS_CHANNEL, thread=status["id"], message=status["id"], user=payloads.ADA["id"]
    )
    await system.bus.publish_reply(run_report(to))
    (posted,) = await bot.fake.wait_for(lambda f: f.channel_messages(status["id"]))
    assert bot.fake.channels[status["id"]]["parent_id"] == o.KERNELS_CHANNEL
    assert "ranked passed" in posted["embeds"][0]["description"]
    refused, opened = (
        bot.fake.calls_to("POST", "/channels/{channel}/messages")[0],
        bot.fake.calls_to("POST", "/channels/{channel}/messages/{message}/threads")[0],
    )
    assert refused.status == 404 and opened.n > refused.n
    # the status message, unknown to this process, is read back and its line updated
    await bot.fake.wait_for(lambda f: f.messages[status["id"]]["content"].endswith("✅ CPU: ranked passed") or None)
    assert bot.fake.messages[status["id"]]["content"].startswith("📥 **Ada** · submission #7\n")


async def test_a_reply_delivered_twice_is_posted_once(make_system, make_bot, nats_url):
    system = await make_system(FakeRunner())
    bot = await make_bot(system)
    to = ReplyTo(Platform.DISCORD, channel=o.KERNELS_CHANNEL)
    reply = Reply(reply_to=to, parts=[reply_parts.text("hello")], title="Twice", id="twice-1")
    raw = await nats.connect(nats_url)
    try:
        for _ in range(2):  # no Nats-Msg-Id: the stream keeps both, as after a crash before the ack
            await raw.jetstream().publish(subjects.reply_subject("discord", o.KERNELS_CHANNEL), encode(reply))
        await system.bus.publish_reply(Reply(reply_to=to, parts=[reply_parts.text("after")], title="After"))
    finally:
        await raw.close()
    await bot.fake.wait_for(lambda f: any("After" in texts_of(m) for m in f.channel_messages(o.KERNELS_CHANNEL)))
    assert sum("Twice" in texts_of(m) for m in bot.fake.channel_messages(o.KERNELS_CHANNEL)) == 1
    assert len([c for c in bot.fake.calls_to("POST", "/channels/{channel}/messages") if "Twice" in texts(c)]) == 2


async def test_a_refused_post_is_skipped_and_the_next_one_goes_out(make_system, make_bot):
    system = await make_system(FakeRunner())
    bot = await make_bot(system)
    bot.fake.forbidden.add(o.ANNOUNCE_CHANNEL)
    await system.bus.publish_reply(
        Reply(
            reply_to=ReplyTo(Platform.DISCORD, channel=o.ANNOUNCE_CHANNEL),
            parts=[reply_parts.text("no access")],
            title="Lost",
        )
    )
    await system.bus.publish_reply(
        Reply(
            reply_to=ReplyTo(Platform.DISCORD, channel=o.KERNELS_CHANNEL),
            parts=[reply_parts.text("access")],
            title="Kept",
        )
    )
    await bot.fake.wait_for(lambda f: f.channel_messages(o.KERNELS_CHANNEL))
    assert [c.status for c in bot.fake.calls_to("POST", "/channels/{channel}/messages")] == [403, 200]


async def test_a_long_report_is_paginated_with_buttons_and_attached_whole(make_system, make_bot):
    system = await make_system(FakeRunner())
    bot = await make_bot(system)
    rows = [[str(i), f"person-{i}", f"{i}.0 µs", f"#{i}", "2026-05-01 10:00"] for i in range(1, 201)]
    long = Reply(
        reply_to=ReplyTo(Platform.DISCORD, channel=o.KERNELS_CHANNEL),
        title="A long ranking",
        parts=[Part(kind=PartKind.TABLE, headers=["rank", "who", "score", "submission", "when"], rows=rows)],
    )
    await system.bus.publish_reply(long)
    (message,) = await bot.fake.wait_for(lambda f: f.channel_messages(o.KERNELS_CHANNEL))
    footer = message["embeds"][0]["footer"]["text"]
    assert footer.startswith("Page 1 of ") and int(footer.split()[-1]) >= 3
    assert [f["name"] for f in bot.fake.files[message["id"]]] == ["a-long-ranking.txt"]
    assert "person-200" in bot.fake.files[message["id"]][0]["data"].decode()
    (buttons,) = message["components"]
    previous, following = buttons["components"]
    assert previous["disabled"] and not following["disabled"]

    click = await bot.send(payloads.button(message, following["custom_id"]))
    (turned,) = await bot.fake.wait_for(lambda f: bot.calls(click))
    assert turned.json["type"] == 7
    page = turned.json["data"]["embeds"][0]
    assert page["footer"]["text"].startswith("Page 2 of ") and "rank" in page["description"].split("\n")[1]
    assert "person-1 " not in page["description"]


def texts_of(message: dict) -> str:
    embed = (message.get("embeds") or [{}])[0]
    return "\n".join(x for x in (message.get("content"), embed.get("title"), embed.get("description")) if x)


def test_stale_progress_in_a_batch_is_dropped():
    to = ReplyTo(Platform.DISCORD, channel="1")

    def progress(run: str, text: str) -> Reply:
        return Reply(reply_to=to, parts=[reply_parts.status(text, Tone.INFO)], update_key=run, final=False)

    batch = [
        progress("a", "a1"),
        progress("b", "b1"),
        progress("a", "a2"),
        run_report(to, "b"),
        Reply(reply_to=to, parts=[reply_parts.text("other")]),
    ]
    kept = latest_only(batch)
    assert [(r.update_key, r.final) for r in kept] == [("a", False), ("b", True), ("", True)]
    assert kept[0].parts[0].text == "a2"


async def test_buttons_that_nothing_answers_any_more_get_a_sentence(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    old = bot.fake.new_message(
        o.KERNELS_CHANNEL,
        {
            "content": "a report from before a restart",
            "components": [
                {
                    "type": 1,
                    "components": [{"type": 2, "style": 2, "label": "Next ▶", "custom_id": "kernelrank:page:next"}],
                }
            ],
        },
        [],
    )
    click = await bot.send(payloads.button(old, "kernelrank:page:next"))
    (answer,) = await bot.fake.wait_for(lambda f: bot.calls(click))
    assert answer.json["type"] == 4 and answer.json["data"]["flags"] & (1 << 6)
    assert "These buttons no longer work" in texts(answer)


async def test_a_gpu_menu_that_nothing_answers_any_more_says_it_is_a_menu(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    old = bot.fake.new_message(o.KERNELS_CHANNEL, {"content": "which GPUs?", "components": []}, [])
    pick = await bot.send(payloads.select(old, "kernelrank:submit:gpus", ["CPU"]))
    (answer,) = await bot.fake.wait_for(lambda f: bot.calls(pick))
    assert "This GPU menu no longer works" in texts(answer) and "run the command again" in texts(answer)
