"""Submitting from Discord: the private answer, the status message, the thread, live progress and the report."""

from __future__ import annotations

import json
from pathlib import Path

from discord_testkit import CORRECT, SUBMIT_RANKED, flags, texts

from runners.fake import FakeRunner
from tests.fakes.discord import objects as o
from tests.fakes.discord import payloads

EPHEMERAL = 1 << 6
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "discord" / "submit_ranked.json"
MESSAGES = "/channels/{channel}/messages"


def reports(fake, channel_id: str) -> list[dict]:
    """Messages in a channel that carry a run report (an embed titled with the submission)."""
    return [
        m
        for m in fake.channel_messages(channel_id)
        if m["embeds"] and "on CPU" in m["embeds"][0].get("title", "") and "Details of" not in m["embeds"][0]["title"]
    ]  # the author's details are apart


async def test_a_ranked_submission_gets_a_private_answer_a_thread_live_status_and_a_report(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner(delay_s=0.5)))
    fake = bot.fake
    interaction = await bot.submit(CORRECT, leaderboard="vectoradd")
    answer = await bot.answer(interaction)

    callback = bot.calls(interaction)[0]
    assert callback.json == {"type": 5, "data": {"flags": EPHEMERAL}}  # private "thinking", within 3 s
    assert flags(answer) & EPHEMERAL or answer.method == "PATCH"
    assert "queued as #1 on CPU, nothing ahead" in texts(answer)
    (status,) = [m for m in fake.channel_messages(o.KERNELS_CHANNEL) if m["content"].startswith("📥")]
    assert f"Follow it in <#{status['id']}>" in texts(answer)
    thread = fake.channels[status["id"]]  # the thread's id is the message's
    assert thread["parent_id"] == o.KERNELS_CHANNEL and thread["name"].startswith("#1 vectoradd ranked")

    (report,) = await fake.wait_for(lambda f: reports(f, status["id"]))
    assert report["content"] == f"<@{payloads.ADA['id']}>"  # the author is notified
    assert "ranked passed" in report["embeds"][0]["description"]
    assert "New #1!" in report["embeds"][0]["description"]
    final = await fake.wait_for(lambda f: "✅ CPU: ranked passed" in f.messages[status["id"]]["content"] or None)
    assert final
    header = fake.messages[status["id"]]["content"].split("\n")[0]
    assert header == "📥 **Ada** · submission #1 · `k.py` → **vectoradd** · ranked"
    edits = [c.json["content"] for c in fake.calls_to("PATCH", MESSAGES + "/{message}")]
    assert any("CPU: queued, next in line" in e for e in edits) and edits[-1].endswith("✅ CPU: ranked passed")
    download = fake.calls_to("GET", "/attachments/{channel}/{attachment}/{filename}")
    assert len(download) == 1 and download[0].status == 200

    shown = await bot.answer(await bot.slash(["leaderboard", "show"], {"leaderboard": "vectoradd"}))
    assert "Ada" in texts(shown)


async def test_several_gpus_bring_a_menu_and_the_pick_is_what_runs(make_system, make_bot):
    system = await make_system(FakeRunner(), pools=["CPU", "H100"])
    bot = await make_bot(system)
    fake = bot.fake
    interaction = await bot.submit(CORRECT, leaderboard="vectoradd")
    question = await fake.wait_for(lambda f: next((c for c in bot.calls(interaction) if c.method == "PATCH"), None))
    (menu,) = [item for row in question.json["components"] for item in row["components"]]
    assert menu["type"] == 3 and [opt["value"] for opt in menu["options"]] == ["CPU", "H100"]
    assert (menu["min_values"], menu["max_values"]) == (1, 2)
    assert not fake.channel_messages(o.KERNELS_CHANNEL)  # nothing public before the pick

    pick = await bot.send(payloads.select(fake.messages[interaction.original], menu["custom_id"], ["CPU"]))
    picked = await fake.wait_for(lambda f: bot.calls(pick))
    assert picked[0].json["type"] == 7 and picked[0].json["data"]["components"] == []
    answer = await bot.answer(interaction)
    assert "queued as #1 on CPU" in texts(answer) and "H100" not in texts(answer)


async def test_a_file_over_the_limit_is_refused_before_it_is_downloaded(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()), max_source_bytes=1024)
    answer = await bot.answer(await bot.submit(b"# big\n" * 1000, leaderboard="vectoradd"))
    assert "k.py is 6 KiB; the limit is 1 KiB" in texts(answer)
    assert not bot.fake.calls_to("GET", "/attachments/{channel}/{attachment}/{filename}")
    assert not bot.fake.calls_to("POST", MESSAGES)


async def test_a_refused_submission_leaves_nothing_public(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    answer = await bot.answer(await bot.submit(b"\x89PNG\r\n\x1a\n", filename="kernel.png", leaderboard="vectoradd"))
    assert "'kernel.png' is not a kernel file" in texts(answer)
    (status,) = bot.fake.calls_to("POST", MESSAGES)
    assert bot.fake.calls_to("DELETE", MESSAGES + "/{message}")[0].path.endswith(status.created)
    assert not bot.fake.channel_messages(o.KERNELS_CHANNEL)
    assert not bot.fake.calls_to("POST", MESSAGES + "/{message}/threads")


async def test_the_files_header_names_the_leaderboard(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    source = b"#!POPCORN leaderboard vectoradd\n#!POPCORN gpu CPU\n" + CORRECT
    answer = await bot.answer(await bot.submit(source, path=["leaderboard", "submit", "test"]))
    assert "test run of k.py queued as #1 on CPU" in texts(answer)


async def test_no_post_permission_means_a_clear_refusal(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    attachment = bot.fake.add_attachment("k.py", CORRECT)
    interaction = await bot.slash(
        SUBMIT_RANKED,
        {"leaderboard": "vectoradd"},
        attachments={"script": attachment},
        app_permissions=o.VIEW_CHANNEL | o.USE_APPLICATION_COMMANDS,
    )
    answer = await bot.answer(interaction)
    assert "I cannot post in this channel" in texts(answer)
    assert not bot.fake.calls_to("POST", MESSAGES)


async def test_in_a_direct_message_the_report_replies_to_the_status_message(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    attachment = bot.fake.add_attachment("k.py", CORRECT, channel_id="1300000000000000900")
    interaction = await bot.slash(
        SUBMIT_RANKED, {"leaderboard": "vectoradd"}, attachments={"script": attachment}, guild=False
    )
    answer = await bot.answer(interaction)
    assert "Results will be posted as replies" in texts(answer)
    (report,) = await bot.fake.wait_for(lambda f: reports(f, interaction.payload["channel_id"]))
    status = bot.fake.channel_messages(interaction.payload["channel_id"])[0]
    assert report["message_reference"]["message_id"] == status["id"]
    assert not bot.fake.calls_to("POST", MESSAGES + "/{message}/threads")
    # no private thread in a direct message: the details come as a direct message (here, the same conversation)
    (details,) = await bot.fake.wait_for(
        lambda f: [
            m
            for m in f.channel_messages(interaction.payload["channel_id"])
            if m["embeds"] and "Details of" in m["embeds"][0].get("title", "")
        ]
    )
    assert bot.fake.calls_to("POST", "/users/@me/channels") and "Ran on" in json.dumps(details)


async def test_inside_a_thread_no_new_thread_is_opened(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    fake = bot.fake
    parent = fake.new_message(o.KERNELS_CHANNEL, {"content": "discussion"}, [])
    existing = o.thread(parent["id"], fake.channels[o.KERNELS_CHANNEL], "discussion", 1440)
    fake.channels[existing["id"]] = existing
    attachment = fake.add_attachment("k.py", CORRECT, channel_id=existing["id"])
    await bot.answer(
        await bot.slash(
            SUBMIT_RANKED, {"leaderboard": "vectoradd"}, attachments={"script": attachment}, channel=existing
        )
    )
    (report,) = await fake.wait_for(lambda f: reports(f, existing["id"]))
    assert not fake.calls_to("POST", MESSAGES + "/{message}/threads")


async def test_results_after_the_interaction_token_expired_still_reach_the_thread(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner(delay_s=1.0)))
    fake = bot.fake
    now = [0.0]
    real = fake.clock
    fake.clock = lambda: real() + now[0]
    interaction = await bot.submit(CORRECT, leaderboard="vectoradd")
    await bot.answer(interaction)
    now[0] = 16 * 60  # the interaction token is dead from here on
    answered = len(fake.calls)
    (status,) = [m for m in fake.channel_messages(o.KERNELS_CHANNEL) if m["content"].startswith("📥")]
    await fake.wait_for(lambda f: reports(f, status["id"]))
    late = fake.calls[answered:]
    assert late and all(c.extra.get("auth") == "bot" for c in late if c.route.startswith("/channels"))
    assert not [c for c in late if c.route.startswith(("/webhooks", "/interactions"))]


async def test_a_payload_written_as_discord_sends_it_is_understood(make_system, make_bot):
    """A static object with every field a real guild interaction carries (not built by our own helpers)."""
    bot = await make_bot(await make_system(FakeRunner()))
    fake = bot.fake
    attachment = fake.add_attachment("solution.py", CORRECT)
    cdn = attachment["url"].split("/solution.py")[0]
    raw = (
        FIXTURE.read_text()
        .replace("{CDN}", cdn)
        .replace('"{SIZE}"', str(len(CORRECT)))
        .replace("1310000000000000042", attachment["id"])
    )
    interaction = await bot.send(json.loads(raw))
    answer = await bot.answer(interaction)
    assert "ranked run of solution.py queued as #1 on CPU" in texts(answer)
    (status,) = fake.channel_messages(o.KERNELS_CHANNEL)
    assert status["content"].startswith("📥 **ada (kernels)** · submission #1")  # the server nickname
    (report,) = await fake.wait_for(lambda f: reports(f, status["id"]))
    assert report["content"] == "<@1300000000000001001>"
