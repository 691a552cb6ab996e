"""Replies as Discord messages: every shape of reply stays inside Discord's limits, and nothing leaks out."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from adapters.discord.render import PAGE_LIMIT, render_reply, status_line
from core.contracts import reply_parts
from core.contracts.messages import Part, PartKind, Platform, Reply, ReplyTo, Tone
from harness.result import Progress
from tests.fakes.discord.limits import message_errors

TO = ReplyTo(Platform.DISCORD, channel="1")


def valid(out, page: int = 0) -> None:
    """Discord's own rules (the fake's checker) accept the message, on every page."""
    embeds = [out.page_embed(page), *out.embeds[1:]] if out.pages else out.embeds
    assert message_errors({"content": out.content, "embeds": embeds}, len(out.files)) is None


def random_reply(rng: random.Random) -> Reply:
    parts: list[Part] = []
    for _ in range(rng.randint(1, 12)):
        kind = rng.choice(["text", "table", "code", "status", "mention", "file"])
        if kind == "text":
            parts.append(reply_parts.text("**word** `x` " * rng.randint(1, 900)))
        elif kind == "table":
            parts.append(
                reply_parts.table(
                    ["shape", "median", "note"],
                    [[f"size={i}", f"{i}.0 µs", "n" * rng.randint(0, 60)] for i in range(rng.randint(0, 300))],
                )
            )
        elif kind == "code":
            parts.append(reply_parts.code("x = 1\n" * rng.randint(1, 400), "python"))
        elif kind == "status":
            parts.append(reply_parts.status("ranked passed " * rng.randint(1, 50), Tone.SUCCESS))
        elif kind == "mention":
            parts.append(Part(kind=PartKind.MENTION, text=str(rng.randint(10**17, 10**18))))
        else:
            parts.append(reply_parts.code("y = 2\n" * 10, "python", filename=f"f{rng.randint(0, 30)}.py"))
    return Reply(reply_to=TO, parts=parts, title="T" * rng.randint(0, 400), tone=rng.choice(list(Tone)))


@pytest.mark.parametrize("seed", range(40))
def test_every_reply_fits_discords_limits_on_every_page(seed):
    out = render_reply(random_reply(random.Random(seed)))
    for page in range(len(out.pages)):
        assert len(out.pages[page]) <= PAGE_LIMIT
        valid(out, page)
    assert out.pages and len(out.files) <= 10 and len(out.embeds) <= 10
    for page in out.pages:  # every page renders on its own: code fences are balanced
        assert page.count("```") % 2 == 0


def test_a_long_table_keeps_its_header_on_every_page_and_the_whole_text_is_attached():
    rows = [[str(i), f"person {i}", f"{i} µs"] for i in range(400)]
    out = render_reply(Reply(reply_to=TO, title="Ranking", parts=[reply_parts.table(["rank", "who", "score"], rows)]))
    assert len(out.pages) > 1
    assert all(page.split("\n")[1].startswith("rank") for page in out.pages)
    assert out.page_embed(1)["footer"]["text"] == f"Page 2 of {len(out.pages)}"
    ((name, data),) = out.files
    assert name == "ranking.txt" and "person 399" in data.decode()


def test_files_are_attached_and_many_become_one_archive():
    few = render_reply(
        Reply(
            reply_to=TO,
            title="Task x",
            parts=[reply_parts.text("about"), reply_parts.code("a = 1", "python", filename="task.py")],
        )
    )
    assert [name for name, _ in few.files] == ["task.py"] and "a = 1" not in few.pages[0]
    many = render_reply(
        Reply(
            reply_to=TO,
            title="Harness",
            parts=[reply_parts.code(f"# {i}", "python", filename=f"h/{i}.py") for i in range(23)],
        )
    )
    assert [name for name, _ in many.files] == ["harness.zip"]


def test_short_code_is_inline_and_cannot_break_out_of_its_block():
    out = render_reply(Reply(reply_to=TO, parts=[reply_parts.code("x = '```'\n@everyone", "python")]))
    assert out.pages[0].count("```") == 2 and out.pages[0].startswith("```python")
    assert not out.content


def test_mentions_notify_only_real_user_ids():
    out = render_reply(
        Reply(
            reply_to=TO,
            parts=[
                Part(kind=PartKind.MENTION, text="123456789012345678"),
                Part(kind=PartKind.MENTION, text="everyone"),
                Part(kind=PartKind.MENTION, text="123456789012345678"),
            ],
        )
    )
    assert out.content == "<@123456789012345678>"


def test_charts_and_images_are_attached_pngs_shown_in_embeds():
    t0 = datetime(2026, 5, 1, tzinfo=UTC)
    chart = reply_parts.chart("Best", "when", "µs", [("CPU", t0, 9.0), ("CPU", t0 + timedelta(days=1), 8.0)])
    image = Part(kind=PartKind.IMAGE, data=b"\x89PNG fake", filename="roofline.png")
    out = render_reply(Reply(reply_to=TO, title="History", parts=[reply_parts.text("x"), chart, image]))
    assert [name for name, _ in out.files] == ["chart-1.png", "roofline.png"]
    assert out.files[0][1].startswith(b"\x89PNG")
    assert out.embeds[0]["image"]["url"] == "attachment://chart-1.png"
    assert out.embeds[1] == {"image": {"url": "attachment://roofline.png"}, "color": out.embeds[0]["color"]}


def test_announcements_get_medals():
    top = [[1, "Ada", 9.5], [2, "B*b", 10.0], [3, "Cy", 12.0]]
    table = reply_parts.table(["rank", "who", "score", "submission"], [[r, n, f"{s} µs", "#1"] for r, n, s in top])
    reply = Reply(
        reply_to=TO,
        title="New top 3 on matmul (H100)",
        parts=[reply_parts.text("**Ada** is now #1"), table],
        data={"kind": "announcement", "leaderboard": "matmul", "gpu": "H100", "top": top},
    )
    out = render_reply(reply)
    lines = out.embeds[0]["description"].split("\n")
    assert lines[2:] == ["🥇 **Ada** · 9.5 µs", "🥈 **B\\*b** · 10.0 µs", "🥉 **Cy** · 12.0 µs"]
    assert out.embeds[0]["title"] == "🏆 New top 3 on matmul (H100)"


def test_status_lines_for_the_live_message():
    progress = reply_parts.progress_reply(TO, "r1", "H100", Progress(stage="timing", index=2, total=5))
    assert status_line(progress) == "⏳ H100: timing 2 of 5"
    final = Reply(reply_to=TO, parts=[reply_parts.status("ranked passed", Tone.SUCCESS)], tone=Tone.SUCCESS)
    assert status_line(final, label="H100") == "✅ H100: ranked passed"
