import io
import zipfile
from datetime import UTC, datetime

import pytest

from adapters.render import (
    bundle,
    chart_png,
    is_file,
    medal,
    monospace_table,
    pages,
    split_text,
    strip_markup,
    summary_line,
    table_pages,
)
from core.contracts import reply_parts
from core.contracts.messages import Platform, Reply, ReplyTo, Tone


def test_monospace_table_aligns_and_cuts_long_cells():
    out = monospace_table(["shape", "median"], [["size=1024", "10 µs"], ["x" * 50, "1.2 ms"]], max_cell=12)
    lines = out.splitlines()
    assert lines[0].index("median") == lines[2].index("10 µs")
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert "x" * 11 + "…" in out and "x" * 12 not in out


@pytest.mark.parametrize("limit", [40, 100, 2000])
def test_split_text_respects_the_limit_and_keeps_fences_balanced(limit):
    text = "intro line\n```python\n" + "\n".join(f"line {i} " + "y" * (i % 30) for i in range(200)) + "\n```\nend"
    chunks = split_text(text, limit)
    assert all(len(c) <= limit for c in chunks)
    assert all(c.count("```") % 2 == 0 for c in chunks)
    joined = "\n".join(chunks)
    for i in (0, 57, 199):
        assert f"line {i} " in joined
    assert chunks[-1].endswith("end")


def test_split_text_cuts_a_line_longer_than_the_limit():
    chunks = split_text("a" * 250, 100)
    assert all(len(c) <= 100 for c in chunks) and "".join(chunks) == "a" * 250


def test_pages():
    assert pages([["a"]] * 5, 2) == [[["a"]] * 2, [["a"]] * 2, [["a"]]]
    assert pages([], 3) == [[]]


def test_chart_png_draws_every_series():
    t0, t1 = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    part = reply_parts.chart(
        "Best on vectoradd", "submitted", "µs", [("H100", t0, 12.0), ("H100", t1, 9.5), ("A100-80GB", t0, 20.0)]
    )
    png = chart_png(part)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 2000


def test_chart_png_refuses_other_parts():
    with pytest.raises(ValueError):
        chart_png(reply_parts.text("no"))


def test_strip_markup_and_summary_line():
    assert strip_markup("**Score** 12 µs on `H100`") == "Score 12 µs on H100"
    reply = Reply(
        reply_to=ReplyTo(Platform.DISCORD),
        title="Submission #4",
        tone=Tone.SUCCESS,
        parts=[reply_parts.status("ranked passed", Tone.SUCCESS)],
    )
    assert summary_line(reply) == "✅ Submission #4: ranked passed"


def test_table_pages_repeat_the_header_and_respect_the_limit():
    rows = [[str(i), "x" * (i % 17)] for i in range(300)]
    pages = table_pages(["n", "text"], rows, 500)
    assert len(pages) > 1 and all(len(p) <= 500 for p in pages)
    assert all(p.startswith("n    text\n") for p in pages)
    assert sum(len(p.split("\n")) - 2 for p in pages) == 300
    with pytest.raises(ValueError):
        table_pages(["a" * 50], [], 20)


def test_bundle_keeps_names_and_bytes():
    archive = zipfile.ZipFile(io.BytesIO(bundle([("harness/a.py", b"a = 1\n"), ("b.cu", b"\x00\x01")])))
    assert archive.namelist() == ["harness/a.py", "b.cu"] and archive.read("b.cu") == b"\x00\x01"


def test_medals_and_files():
    assert [medal(r) for r in (1, 2, 3, 4)] == ["🥇", "🥈", "🥉", "#4"]
    assert is_file(reply_parts.code("x", filename="k.py")) and not is_file(reply_parts.code("x"))
    assert not is_file(reply_parts.text("k.py"))


def test_printed_output_starts_at_a_whole_line_and_long_details_are_attached_under_their_reply_title():
    from adapters.discord.render import render_reply
    from adapters.slack.blocks import render as slack_render
    from harness.result import EvalResult, Mode, Status

    printed = "".join(f"step {i}: loss {i / 7:.6f}\n" for i in range(2000))
    result = EvalResult(status=Status.PASSED, mode=Mode.TEST, problem="p", stdout=printed)
    [output] = [p for p in reply_parts.detail_parts(result) if p.kind.value == "code"]
    first, second = output.text.splitlines()[:2]
    assert first.endswith("earlier lines left out]") and second.startswith("step ") and "loss" in second
    assert output.text.endswith("step 1999: loss 285.571429")
    details = Reply(ReplyTo(Platform.DISCORD, "1"), [output], title="Details of submission #12 on CPU")
    assert [name for name, _ in render_reply(details).files] == ["details-of-submission-12-on-cpu.txt"]
    longer = Reply(details.reply_to, [reply_parts.code(printed)], title=details.title)  # past Slack's section
    assert [u.filename for u in slack_render(longer).uploads] == ["details-of-submission-12-on-cpu.txt"]
    assert reply_parts.tail("y" * 300, 50).startswith("[250 earlier characters left out]\n")
