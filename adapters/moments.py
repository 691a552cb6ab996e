"""Moments in chat text shown in each reader's own time zone.

The core writes a moment as ``2026-12-01 18:00 UTC`` (``core.service.args.deadline_words``). Discord and Slack
each have a token that their clients show in the reader's zone and language: Discord ``<t:UNIX:f>``, Slack
``<!date^UNIX^{date_short_pretty} {time}|fallback>`` (the fallback, our UTC text, where the client cannot).
Only prose gets them: inside a code block (our tables) neither platform renders a token.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

UTC_MOMENT = re.compile(r"\b(\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC\b")


def _replace(text: str, token) -> str:
    def swap(match: re.Match[str]) -> str:
        try:
            moment = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
        except ValueError:  # not a real date (2026-13-40): leave the words as they are
            return match.group(0)
        return token(int(moment.timestamp()), match.group(0))

    return UTC_MOMENT.sub(swap, text)


def discord_moments(text: str) -> str:
    """``2026-12-01 18:00 UTC`` as Discord's ``<t:1796148000:f>``: the date and time in the reader's zone."""
    return _replace(text, lambda unix, _: f"<t:{unix}:f>")


def slack_moments(text: str) -> str:
    """``2026-12-01 18:00 UTC`` as Slack's date token, the UTC text its fallback."""
    return _replace(text, lambda unix, shown: f"<!date^{unix}^{{date_short_pretty}} {{time}}|{shown}>")
