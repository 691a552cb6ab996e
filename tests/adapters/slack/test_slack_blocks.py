"""Replies as Block Kit: Slack's limits kept, user text escaped, long content turned into files."""

from __future__ import annotations

import json

from adapters.slack.blocks import (
    HEADER_LIMIT,
    MAX_BLOCKS,
    SECTION_LIMIT,
    SHOW_BOARD,
    SUBMIT_AGAIN,
    VIEW_SUBMISSION,
    one_line,
    render,
)
from core.contracts import reply_parts
from core.contracts.messages import Part, PartKind, Platform, Reply, ReplyTo, Tone
from harness.result import EvalResult, Mode, ShapeStats, Status, SystemInfo

TO = ReplyTo(platform=Platform.SLACK, channel="C0GENERAL", thread="1700000000.000100", user="U0ALICE")


def shape(n: int) -> ShapeStats:
    return ShapeStats(
        spec={"size": 1024 * n, "seed": 1},
        n=100,
        median_us=10.0 + n,
        mean_us=10.5 + n,
        trimmed_mean_us=10.2 + n,
        std_us=0.3,
        ci_low_us=9.9 + n,
        ci_high_us=10.1 + n,
        min_us=9.5 + n,
        p10_us=9.7 + n,
        p90_us=10.9 + n,
        max_us=12.0 + n,
        first_call_us=40.0,
        achieved_gbps=800.0,
    )


def result_reply(shapes: int = 3) -> Reply:
    result = EvalResult(
        status=Status.PASSED,
        mode=Mode.RANKED,
        problem="vectoradd",
        score_us=12.5,
        shapes=[shape(i) for i in range(shapes)],
        system=SystemInfo(device="cuda", gpu_name="H100"),
        wall_s=4.2,
    )
    parts = [Part(kind=PartKind.MENTION, text="U0ALICE"), *reply_parts.result_parts(result)]
    parts.insert(2, reply_parts.text("**New #1!** Rank #1 on vectoradd / H100."))
    return Reply(
        reply_to=TO,
        parts=parts,
        tone=Tone.SUCCESS,
        title="Submission #7 to vectoradd on H100",
        in_reply_to="run1",
        update_key="run1",
        data={
            "submission_id": 7,
            "run_id": "run1",
            "status": "passed",
            "score_us": 12.5,
            "leaderboard": "vectoradd",
            "gpu": "H100",
            "mode": "ranked",
        },
    )


def all_texts(blocks: list[dict]) -> list[str]:
    found = []
    for block in blocks:
        if "text" in block:
            found.append(block["text"]["text"])
        found += [e.get("text", "") for e in block.get("elements", []) if isinstance(e.get("text", ""), str)]
    return found


def assert_within_slack_limits(blocks: list[dict]) -> None:
    assert len(blocks) <= MAX_BLOCKS
    for block in blocks:
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= HEADER_LIMIT
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= SECTION_LIMIT
        if block["type"] == "actions":
            assert len({e["action_id"] for e in block["elements"]}) == len(block["elements"])


def test_a_result_report_has_verdict_score_shape_table_and_buttons():
    message = render(result_reply())
    assert_within_slack_limits(message.blocks)
    assert message.blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "emoji": True, "text": "✅ Submission #7 to vectoradd on H100"},
    }
    texts = "\n".join(all_texts(message.blocks))
    assert "<@U0ALICE>" in texts and message.text.startswith("<@U0ALICE> ")
    assert "*New #1!*" in texts and "**" not in texts  # Slack bold is one star
    assert "*Score* 12.5 µs" in texts
    table = next(t for t in all_texts(message.blocks) if "95% CI" in t)
    assert table.startswith("```\n") and table.endswith("\n```") and "±1.0" in table
    (actions,) = [b for b in message.blocks if b["type"] == "actions"]
    assert {e["action_id"]: e["value"] for e in actions["elements"]} == {
        VIEW_SUBMISSION: "7",
        SHOW_BOARD: "vectoradd H100",
        SUBMIT_AGAIN: "ranked vectoradd H100",
    }
    assert message.uploads == []


def test_a_long_table_becomes_a_file_with_a_preview():
    message = render(result_reply(shapes=300))
    assert_within_slack_limits(message.blocks)
    (upload,) = message.uploads
    assert upload.filename.startswith("table-") and upload.filename.endswith(".txt")
    assert upload.content.decode().count("\n") == 301  # header, rule, 300 rows
    texts = all_texts(message.blocks)
    assert any("more rows in the attached " + upload.filename in t for t in texts)


def test_long_code_becomes_a_file_named_by_the_reply():
    source = "\n".join(f"x{i} = {i}" for i in range(2000))
    reply = Reply(
        reply_to=TO,
        title="Python template for matmul",
        parts=[reply_parts.code(source, "python")],
        data={"filename": "matmul-python.py", "source": source},
    )
    message = render(reply)
    assert [u.filename for u in message.uploads] == ["matmul-python.py"]
    assert message.uploads[0].content.decode() == source
    assert_within_slack_limits(message.blocks)


def test_a_chart_is_uploaded_as_png():
    chart = reply_parts.chart(
        "Best score on vectoradd",
        "submitted",
        "µs",
        [("H100", "2026-01-01T10:00:00", 20.0), ("H100", "2026-01-02T10:00:00", 12.0)],
    )
    message = render(Reply(reply_to=TO, title="Your progress", parts=[chart]))
    (upload,) = message.uploads
    assert upload.filename.endswith(".png") and upload.content.startswith(b"\x89PNG")
    assert any("chart" in t.lower() for t in all_texts(message.blocks))


def test_more_parts_than_blocks_allowed_moves_the_rest_to_a_file():
    reply = Reply(reply_to=TO, title="Many", parts=[reply_parts.text(f"paragraph {i}") for i in range(120)])
    message = render(reply)
    assert len(message.blocks) == MAX_BLOCKS
    assert "report.txt" in all_texts(message.blocks)[-1]
    (upload,) = message.uploads
    assert "paragraph 119" in upload.content.decode()


def test_user_text_cannot_ping_or_inject_markup():
    hostile = "<!channel> & <https://evil.example|click> <@U0BOSS>"
    reply = Reply(
        reply_to=TO,
        title=hostile,
        parts=[
            reply_parts.text(hostile),
            reply_parts.table(["who"], [[hostile]]),
            Part(kind=PartKind.MENTION, text="<!everyone>"),
        ],
    )
    message = render(reply)
    mrkdwn = [b for b in message.blocks if b["type"] != "header"]  # plain_text is never parsed for mentions
    dumped = json.dumps(mrkdwn, ensure_ascii=False) + message.text
    assert "<!channel>" not in dumped and "<!everyone>" not in dumped and "<@U0BOSS>" not in dumped
    assert "&lt;!channel&gt; &amp;" in dumped


def test_progress_and_closing_lines_are_one_context_line():
    progress = reply_parts.progress_reply(
        TO, "run1", "H100", __import__("harness.result").result.Progress(stage="timing", index=2, total=5)
    )
    line = one_line(progress)
    assert line.blocks == [{"type": "context", "elements": [{"type": "mrkdwn", "text": "🔵 H100: timing 2 of 5"}]}]
    assert one_line(result_reply()).text.endswith("ranked passed, score 12.5 µs")


def test_queue_token_and_announcement_replies_render():
    queue = Reply(
        reply_to=TO,
        title="Queue",
        parts=[
            reply_parts.table(
                ["GPU", "waiting", "running", "workers"], [["H100", "3", "1", "1"], ["CPU", "0", "0", "2"]]
            ),
            reply_parts.status("You are #2 in the H100 queue.", Tone.INFO),
        ],
    )
    texts = all_texts(render(queue).blocks)
    assert any("H100  3" in t for t in texts) and any("You are #2" in t for t in texts)

    token = Reply(
        reply_to=TO,
        ephemeral=True,
        title="Your personal token",
        parts=[reply_parts.code("krt_0123456789abcdef"), reply_parts.text("Shown once: keep it secret.")],
    )
    assert "```\nkrt_0123456789abcdef\n```" in all_texts(render(token).blocks)

    announcement = Reply(
        reply_to=ReplyTo(platform=Platform.SLACK, channel="C0CHALLENGE"),
        title="New top 3",
        parts=[reply_parts.table(["rank", "who", "score"], [["1", "Ada", "10.0 µs"]])],
        data={"kind": "announcement", "leaderboard": "vectoradd", "gpu": "H100", "top": [[1, "Ada", 10.0]]},
    )
    blocks = render(announcement).blocks
    (actions,) = [b for b in blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in actions["elements"]] == [SHOW_BOARD, SUBMIT_AGAIN]
