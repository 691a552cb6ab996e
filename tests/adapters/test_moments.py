"""Deadlines in each reader's time zone on Discord and Slack, and someone's text kept literal on Discord."""

from adapters.discord.render import _escape, render_reply
from adapters.moments import discord_moments, slack_moments
from adapters.slack.blocks import render
from core.contracts.messages import Platform, Reply, ReplyTo
from core.contracts.reply_parts import table, text

CLOSES = "Closes 2026-12-01 18:00 UTC, 4 d 2 h left."  # as core.service.args.deadline_words writes it
UNIX = 1796148000  # 2026-12-01 18:00 UTC


def test_moments_become_each_platforms_token():
    assert discord_moments(CLOSES) == f"Closes <t:{UNIX}:f>, 4 d 2 h left."
    assert slack_moments(CLOSES) == (
        f"Closes <!date^{UNIX}^{{date_short_pretty}} {{time}}|2026-12-01 18:00 UTC>, 4 d 2 h left."
    )
    assert discord_moments("2026-13-40 25:00 UTC") == "2026-13-40 25:00 UTC"  # no such moment: words kept


def test_prose_gets_tokens_and_tables_keep_the_utc_text():
    reply = Reply(reply_to=ReplyTo(Platform.DISCORD), parts=[text(CLOSES), table(["deadline"], [[CLOSES]])])
    description = render_reply(reply).embeds[0]["description"]
    assert f"<t:{UNIX}:f>" in description and "2026-12-01 18:00 UTC" in description  # the table is a code block
    slack = str(render(Reply(reply_to=ReplyTo(Platform.SLACK), parts=[text(CLOSES)])).blocks)
    assert f"<!date^{UNIX}^" in slack


def test_discord_escaping_covers_links_headings_and_lists():
    for hostile in ("[free nitro](https://evil.example)", "# BIG", "- item", "**bold** ~~x~~ ||spoiler||"):
        escaped = _escape(hostile)
        assert escaped != hostile and escaped.replace("\\", "") == hostile
