"""A closed challenge's results as report parts: each (leaderboard, GPU)'s podium with medals, what was held for
review and why, ties, and the team standings. The announcement and ``challenge TITLE`` show the same parts."""

from __future__ import annotations

from typing import Any

from core.contracts import reply_parts
from core.contracts.messages import Part
from core.service.podium import MEDALS


def results_parts(results: dict[str, Any]) -> list[Part]:
    parts = []
    for board in results.get("boards", []):
        parts.append(reply_parts.text(f"**{board['leaderboard']} on {board['gpu']}**"))
        if not board["podium"]:
            parts.append(reply_parts.text("Nobody ranked."))
            continue
        parts.append(
            reply_parts.table(
                ["", "who", "score", "verification", "submission"],
                [
                    [
                        medal(entry),
                        entry["name"],
                        reply_parts.format_us(entry["score_us"]),
                        verdict_words(entry),
                        f"#{entry['submission_id']}",
                    ]
                    for entry in board["podium"]
                ],
            )
        )
    if results.get("teams"):
        parts.append(reply_parts.text("**Teams** (points per rank: docs/challenges.md)"))
        parts.append(reply_parts.table(["team", "points"], results["teams"]))
    return parts or [reply_parts.text("No leaderboards had standings.")]


def medal(entry: dict[str, Any]) -> str:
    if entry["verdict"] != "verified":
        return "held"
    return MEDALS[entry["rank"] - 1] if entry["rank"] <= len(MEDALS) else f"#{entry['rank']}"


def verdict_words(entry: dict[str, Any]) -> str:
    if entry["verdict"] != "verified":
        return f"held for review: {entry['reason']}"
    tie = f"; a tie with #{', #'.join(map(str, entry['tie_with']))}" if entry.get("tie_with") else ""
    return f"verified (re-run {reply_parts.format_us(entry['rerun_us'])}){tie}"


def podium_marks(results: dict[str, Any], leaderboard: str, gpu: str) -> dict[str, str]:
    """run id -> the medal (or "held") of a closed challenge's podium on one (leaderboard, GPU), for ``show``."""
    return {
        entry["run_id"]: medal(entry)
        for board in results.get("boards", [])
        if (board["leaderboard"], board["gpu"]) == (leaderboard, gpu)
        for entry in board["podium"]
    }
