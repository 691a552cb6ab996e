"""What commands name, read the same way by every handler: a leaderboard, GPUs, a person, a number.

Each helper raises ``UserError`` (or ``NotFound``) with one sentence that says what to type instead.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from core.contracts.errors import NotFound, UserError, shown
from core.contracts.messages import Command, Reply
from core.service.deps import Deps
from core.service.leaderboards import Board
from core.service.people import CHAT_PLATFORMS
from storage.records import Leaderboard


async def leaderboard(deps: Deps, name: str) -> Board:
    if not name:
        raise UserError("Name a leaderboard (or add `#!POPCORN leaderboard NAME` to the file); `list` shows them.")
    board = await deps.boards.get(name)
    if board is None:
        raise NotFound(f"There is no leaderboard {shown(name)!r}; `list` shows the leaderboards.")
    return board


def choose_gpus(board: Leaderboard, wanted: list[str], allow_all: bool = False) -> list[str]:
    if not board.gpus:
        raise UserError(f"{board.name} has no GPU to run on yet; ask an admin to add one.")
    wanted = [name for entry in wanted for name in re.split(r"[\s,]+", entry) if name]  # "H100,A100" too
    if not wanted:
        if len(board.gpus) == 1 or allow_all:
            return list(board.gpus)
        raise UserError(f"{board.name} runs on {', '.join(board.gpus)}: choose one or more with --gpu.")
    by_name = {g.lower(): g for g in board.gpus}
    unknown = [g for g in wanted if g.lower() not in by_name]
    if unknown:
        raise UserError(
            f"{board.name} does not offer {', '.join(map(shown, unknown[:3]))}; it runs on {', '.join(board.gpus)}."
        )
    return list(dict.fromkeys(by_name[g.lower()] for g in wanted))


def asked_in_chat(cmd: Command) -> bool:
    """Whether ``cmd`` comes from a chat account, where a bare id names someone on the same chat platform."""
    return cmd.actor.platform in CHAT_PLATFORMS and not cmd.credential_sha256


async def other_person(cmd: Command, deps: Deps, who: str) -> int:
    """Another person, looked up (never created, never renamed) by ``platform:id``, an id on the asker's chat
    platform, or a display name from the terminal."""
    platform, sep, user_id = who.partition(":")
    if not sep and asked_in_chat(cmd):
        platform, user_id = cmd.actor.platform.value, who
    if sep or user_id:
        found = await deps.db.read(deps.db.store.find_person, platform.lower(), user_id)
        if found is None:
            raise NotFound(f"kernelrank knows nobody as {shown(who)!r} yet.")
        return found
    named = await deps.db.read(deps.db.store.people_named, who)
    if len(named) != 1:
        raise (
            NotFound(f"kernelrank knows nobody called {shown(who)!r}; `show LEADERBOARD` lists names.")
            if not named
            else UserError(
                f"{len(named)} people are called {shown(who)!r}; name one by their chat id, like discord:123456."
            )
        )
    return named[0][0]


def int_arg(cmd: Command, key: str, what: str) -> int:
    try:
        return int(str(cmd.args.get(key, "")).lstrip("#"))
    except ValueError:
        raise UserError(f"Give the {what} as a number, like 42.") from None


def row_limit(cmd: Command, default: int, most: int = 500) -> int:
    """How many rows to show: a number from 1 to ``most``."""
    if not cmd.args.get("limit"):
        return default
    wanted = int_arg(cmd, "limit", "limit")
    if not 1 <= wanted <= most:
        raise UserError(f"Ask for 1 to {most} rows.")
    return wanted


def page_number(cmd: Command) -> int:
    """Which page of rows to show, from 1 (the default)."""
    if not cmd.args.get("page"):
        return 1
    page = int_arg(cmd, "page", "page")
    if page < 1:
        raise UserError("Give the page as a number from 1, like 2.")
    return page


def language(file_name: str) -> str:
    return "cuda" if file_name.endswith((".cu", ".cuh")) else "python" if file_name.endswith(".py") else ""


def deadline_words(deadline: datetime | None, now: datetime | None = None) -> str:
    """The deadline, and with ``now`` what is left of it ("2026-12-01 18:00 UTC, 2 d 3 h left")."""
    if deadline is None:
        return "none"
    if now is None:
        return f"{deadline:%Y-%m-%d %H:%M} UTC"
    return f"{deadline:%Y-%m-%d %H:%M} UTC, {time_left(deadline, now)}"


def time_left(deadline: datetime, now: datetime) -> str:
    seconds = int((deadline - now).total_seconds())
    if seconds <= 0:
        return "closed"
    days, hours, minutes = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    shown = f"{days} d {hours} h" if days else f"{hours} h {minutes} min" if hours else f"{max(minutes, 1)} min"
    return f"{shown} left"


def moment_arg(cmd: Command, key: str) -> datetime | None:
    """A time typed as "YYYY-MM-DD HH:MM" (or ISO 8601), taken as UTC unless it names its zone; None if not given."""
    text = str(cmd.args.get(key) or "").strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("UTC", "").strip())
    except ValueError:
        raise UserError(f'Give --{key} as "YYYY-MM-DD HH:MM" in UTC, like "2026-12-01 18:00".') from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def reply(cmd: Command, title: str, parts: list, data: dict | None = None) -> Reply:
    return Reply(reply_to=cmd.reply_to, in_reply_to=cmd.id, title=title, parts=parts, data=data or {})
