"""Top-3 announcements: a ranked result that enters the top 3 of a (leaderboard, GPU) is announced in chat.

``KERNELRANK_ANNOUNCE`` lists the channels, ``platform:channel id`` separated by commas, e.g.
``discord:1234567890,slack:C0123ABCD``. The top 3 changed exactly when one of its entries is a run that just
finished: results only ever add entries, so any change to the top 3 is a new personal best that ranks there.
Each announcement is a ``Reply`` with ``data["kind"] == "announcement"`` (see ``core.contracts.messages.Reply``); its id
is derived from the run and the channel, so publishing it twice shows it once. The core announces only results
it stored for the first time: a result delivered again, possibly long after, is never announced again (the
price: a crash between storing a result and announcing it loses that one announcement, not the result).
"""

from __future__ import annotations

from collections.abc import Iterable

from core.contracts import reply_parts
from core.contracts.config import ConfigError
from core.contracts.messages import Platform, Reply, ReplyTo, Tone
from storage.records import RankRow, RunInfo

TOP = 3
CHAT_PLATFORMS = (Platform.DISCORD, Platform.SLACK)


def announcement_targets(entries: Iterable[str], setting: str = "KERNELRANK_ANNOUNCE") -> list[ReplyTo]:
    """Parse ``platform:channel`` entries; ``ConfigError`` names the entry (and the ``setting``) that is wrong."""
    targets = []
    for entry in entries:
        platform, _, channel = entry.strip().partition(":")
        if platform.lower() not in {p.value for p in CHAT_PLATFORMS} or not channel.strip():
            raise ConfigError(
                f"{setting} entry {entry!r} is not platform:channel with platform "
                f"{' or '.join(p.value for p in CHAT_PLATFORMS)}, e.g. discord:1234567890."
            )
        targets.append(ReplyTo(platform=Platform(platform.lower()), channel=channel.strip()))
    return targets


def challenge_news(announce: list[str], configured: list[str]) -> list[str]:
    """Where a challenge's news goes: its own ``--announce`` channels, else the configured announcement channels
    (``KERNELRANK_ANNOUNCE``), so a challenge scheduled without ``--announce`` is still heard."""
    return list(announce or configured)


def announcements(
    finished: Iterable[RunInfo], standings: dict[tuple[str, str], dict[int, RankRow]], targets: list[ReplyTo]
) -> list[Reply]:
    """One reply per target for each (leaderboard, GPU) whose top 3 now holds one of the ``finished`` runs."""
    if not targets:
        return []
    finished = list(finished)
    replies = []
    for (leaderboard, gpu), standing in standings.items():
        top = sorted(standing.values(), key=lambda row: row.rank)[:TOP]
        top_runs = {row.run_id: row for row in top}
        entered = [
            run for run in finished if (run.leaderboard, run.gpu) == (leaderboard, gpu) and run.run_id in top_runs
        ]
        if not entered:
            continue
        newest = top_runs[entered[-1].run_id]
        headline = (
            f"**{newest.display_name}** is now #{newest.rank} on **{leaderboard}** ({gpu}) with "
            f"{reply_parts.format_us(newest.score_us)}."
        )
        table = reply_parts.table(
            ["rank", "who", "score", "submission"],
            [[row.rank, row.display_name, reply_parts.format_us(row.score_us), f"#{row.submission_id}"] for row in top],
        )
        data = {
            "kind": "announcement",
            "leaderboard": leaderboard,
            "gpu": gpu,
            "top": [[row.rank, row.display_name, row.score_us] for row in top],
            "submission_id": newest.submission_id,
        }
        replies += [
            Reply(
                reply_to=target,
                title=f"New top {TOP} on {leaderboard} ({gpu})",
                tone=Tone.SUCCESS,
                parts=[reply_parts.text(headline), table],
                data=data,
                id=f"announce-{newest.run_id}-{target.platform.value}-{target.channel}",
            )
            for target in targets
        ]
    return replies
