"""Challenges: ``admin challenge create|update|cancel``, ``challenges``, ``challenge TITLE`` and ``admin team add``.

A challenge groups leaderboards between an opening and a close; scheduling it sets those leaderboards' opening and
deadline, so a submission is refused outside its time at once, whatever the scheduler is doing. The scheduler
(``core.service.scheduler``) announces the opening and the reminders, and at the close verifies the podium and
announces the winners; ``challenge TITLE`` shows live standings until then and the verified results after.
"""

from __future__ import annotations

import dataclasses
import re

from core.contracts import reply_parts
from core.contracts.config import ConfigError
from core.contracts.errors import Forbidden, NotFound, UserError, shown
from core.contracts.messages import Command, Reply
from core.service.announce import announcement_targets, challenge_news
from core.service.args import leaderboard, moment_arg, other_person, reply, time_left
from core.service.challenge_report import results_parts
from core.service.deps import Deps
from core.service.pending import Pending
from core.service.people import Caller
from core.service.rounds import rounds_of
from core.service.validation import save
from storage.records import Challenge


async def create(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    title = str(cmd.args.get("title") or "").strip()
    if not 1 <= len(title) <= 80:
        raise UserError('Give the challenge a title of 1 to 80 characters, like "Week 48: softmax".')
    if await deps.db.read(deps.db.store.challenges.get, title):
        raise UserError(
            f"A challenge called {title!r} exists already; choose another title, or change it with "
            f"`admin challenge update {title!r}`."
        )
    if not cmd.args.get("leaderboards") or not cmd.args.get("closes"):
        raise UserError(
            'Give the challenge its leaderboards and its close: --leaderboards a,b --closes "YYYY-MM-DD HH:MM".'
        )
    ch = await _with_settings(
        cmd,
        Challenge(title=title, leaderboards=[], opens_at=deps.now(), closes_at=deps.now(), created_by=caller.person_id),
        caller,
        deps,
    )
    stored = await deps.db.write(deps.db.store.challenges.add, ch, deps.now())
    await _schedule_boards(stored, cmd, caller, deps)
    await deps.db.write(deps.db.store.audit, caller.signature, "challenge create", _detail(stored))
    return reply(cmd, f"{title} scheduled", [reply_parts.text(_words(stored, deps))], data={"challenge": title})


async def update(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    ch = await _managed(cmd, caller, deps)
    if "close" in ch.done or ch.cancelled_at:
        raise UserError(
            f"{ch.title} is {'cancelled' if ch.cancelled_at else 'closed'}; create a new challenge instead."
        )
    changed = await _with_settings(cmd, ch, caller, deps)
    await deps.db.write(deps.db.store.challenges.update, changed)
    await _schedule_boards(changed, cmd, caller, deps)
    await deps.db.write(deps.db.store.audit, caller.signature, "challenge update", _detail(changed))
    return reply(cmd, f"{ch.title} updated", [reply_parts.text(_words(changed, deps))], data={"challenge": ch.title})


async def cancel(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    ch = await _managed(cmd, caller, deps)
    if "close" in ch.done or ch.cancelled_at:
        raise UserError(f"{ch.title} is {'cancelled' if ch.cancelled_at else 'closed'} already.")
    await deps.db.write(deps.db.store.challenges.update, dataclasses.replace(ch, cancelled_at=deps.now()))
    await deps.db.write(deps.db.store.audit, caller.signature, "challenge cancel", {"challenge": ch.title})
    freed = await _unschedule_boards(ch, cmd, caller, deps)
    return reply(
        cmd,
        f"{ch.title} cancelled",
        [
            reply_parts.text(
                f"**{ch.title}** is cancelled: nothing more is announced or crowned."
                + (
                    f" {', '.join(freed)} no longer open or close with it: they take submissions with no deadline; "
                    "`admin update LEADERBOARD --deadline` gives one, `admin close` closes one now."
                    if freed
                    else ""
                )
            )
        ],
        data={"challenge": ch.title, "state": "cancelled", "leaderboards": freed},
    )


async def listed(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    now, rows, data = deps.now(), [], []
    for ch in deps.db.store.challenges.listed():
        if ch.cancelled_at:
            continue
        state = _state(ch, now)
        when = {
            "upcoming": f"opens {ch.opens_at:%Y-%m-%d %H:%M} UTC",
            "open": f"closes {ch.closes_at:%Y-%m-%d %H:%M} UTC, {time_left(ch.closes_at, now)}",
            "closing": "closed: verifying the podium",
            "closed": f"winners: {_winners(ch)}",
        }[state]
        rows.append([ch.title, state, ", ".join(ch.leaderboards), when])
        data.append(
            {
                "title": ch.title,
                "state": state,
                "leaderboards": ch.leaderboards,
                "opens": ch.opens_at.isoformat(),
                "closes": ch.closes_at.isoformat(),
            }
        )
    if not rows:
        return reply(
            cmd,
            "Challenges",
            [reply_parts.text("No challenges yet: an admin schedules one with `admin challenge create`.")],
            data={"challenges": []},
        )
    return reply(
        cmd,
        "Challenges",
        [reply_parts.table(["challenge", "state", "leaderboards", "when"], rows)],
        data={"challenges": data},
    )


async def show(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    ch = await _challenge(cmd, deps)
    now = deps.now()
    state = "cancelled" if ch.cancelled_at else _state(ch, now)
    data = {
        "challenge": ch.title,
        "state": state,
        "leaderboards": ch.leaderboards,
        "opens": ch.opens_at.isoformat(),
        "closes": ch.closes_at.isoformat(),
    }
    if state == "closed" and ch.results is not None:
        return reply(cmd, f"{ch.title}: results", results_parts(ch.results), data=data | {"results": ch.results})
    parts = [
        reply_parts.text(
            f"**{ch.title}** ({state}): {ch.opens_at:%Y-%m-%d %H:%M} to {ch.closes_at:%Y-%m-%d %H:%M} "
            f"UTC, {time_left(ch.closes_at, now)}."
        )
    ]
    standings = []
    for name in ch.leaderboards:
        board = await deps.boards.get(name)
        rounds = rounds_of(deps, name)
        window = rounds.window(rounds.number_at(min(now, ch.closes_at)))  # the challenge's round
        for gpu in board.leaderboard.gpus if board else []:
            rows = await deps.db.read(deps.db.store.ranking, name, gpu, 3, window)
            standings.append(
                {
                    "leaderboard": name,
                    "gpu": gpu,
                    "rows": [
                        {"rank": r.rank, "person_id": r.person_id, "name": r.display_name, "score_us": r.score_us}
                        for r in rows
                    ],
                }
            )
            parts.append(reply_parts.text(f"**{name} on {gpu}**"))
            parts.append(
                reply_parts.table(
                    ["rank", "who", "score"],
                    [[r.rank, r.display_name, reply_parts.format_us(r.score_us)] for r in rows],
                )
                if rows
                else reply_parts.text("Nobody ranked yet.")
            )
    return reply(cmd, ch.title, parts, data=data | {"standings": standings})


async def team_add(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    team = str(cmd.args.get("team") or "").strip()
    if not 1 <= len(team) <= 60:
        raise UserError("Give the team a name of 1 to 60 characters.")
    who = [w for w in re.split(r"[\s,]+", str(cmd.args.get("people") or "")) if w]
    if not who:
        raise UserError("Name the people to add: a comma list of discord:ID, slack:ID or names.")
    people = [await other_person(cmd, deps, w) for w in who]
    await deps.db.write(deps.db.store.challenges.add_to_team, team, people)
    await deps.db.write(deps.db.store.audit, caller.signature, "team add", {"team": team, "people": people})
    return reply(cmd, f"Team {team}", [reply_parts.text(f"{len(people)} added to **{team}**.")], data={"team": team})


async def _managed(cmd: Command, caller: Caller, deps: Deps) -> Challenge:
    ch = await _challenge(cmd, deps)
    if not caller.manages(ch.created_by):
        raise Forbidden(f"{ch.title} was scheduled by someone else; only they or an admin can change it.")
    return ch


async def _challenge(cmd: Command, deps: Deps) -> Challenge:
    title = str(cmd.args.get("title") or "")
    ch = await deps.db.read(deps.db.store.challenges.get, title)
    if ch is None:
        raise NotFound(f"There is no challenge {shown(title)!r}; `challenges` lists them.")
    return ch


async def _with_settings(cmd: Command, ch: Challenge, caller: Caller, deps: Deps) -> Challenge:
    names = [n for n in re.split(r"[\s,]+", str(cmd.args.get("leaderboards") or "")) if n]
    found = [(await leaderboard(deps, name)).leaderboard for name in names]
    if others := [lb.name for lb in found if not caller.manages(lb.created_by)]:
        raise Forbidden(
            f"{', '.join(others)} was created by someone else; a challenge of yours may hold only your "
            "own leaderboards (or ask an admin)."
        )
    boards = [lb.name for lb in found] or ch.leaderboards
    opens, closes = moment_arg(cmd, "opens") or ch.opens_at, moment_arg(cmd, "closes") or ch.closes_at
    if closes <= deps.now():
        raise UserError(f"The close {closes:%Y-%m-%d %H:%M} UTC has passed; give a later --closes.")
    if opens >= closes:
        raise UserError(
            f"It would open ({opens:%Y-%m-%d %H:%M} UTC) after it closes ({closes:%Y-%m-%d %H:%M} UTC); "
            "give an earlier --opens or a later --closes."
        )
    announce = [e for e in str(cmd.args.get("announce") or "").split(",") if e.strip()] or ch.announce
    try:
        announcement_targets(announce)
    except ConfigError:
        raise UserError(
            "Give --announce as a comma list of platform:channel, like discord:1234567890,slack:C0123; "
            "the platforms are discord and slack."
        ) from None
    return dataclasses.replace(
        ch, leaderboards=boards, opens_at=opens, closes_at=closes, announce=[e.strip() for e in announce]
    )


async def _schedule_boards(ch: Challenge, cmd: Command, caller: Caller, deps: Deps) -> None:
    """The challenge's leaderboards open and close with it."""
    for name in ch.leaderboards:
        board = (await leaderboard(deps, name)).leaderboard
        timed = dataclasses.replace(board, opens_at=ch.opens_at, deadline=ch.closes_at)
        await save(Pending(timed, f"schedule for {ch.title}", cmd.reply_to, cmd.id, caller.signature), deps, deps.now())


async def _unschedule_boards(ch: Challenge, cmd: Command, caller: Caller, deps: Deps) -> list[str]:
    """Take the cancelled challenge's opening and close off its leaderboards that still carry them (a deadline
    left behind would close them silently, and crown them after a core restart); the names freed."""
    freed = []
    for name in ch.leaderboards:
        board = await deps.boards.get(name)
        if board is None or board.leaderboard.deadline != ch.closes_at:
            continue  # deleted, or given a time of its own since
        untimed = dataclasses.replace(board.leaderboard, opens_at=None, deadline=None)
        await save(
            Pending(untimed, f"unschedule ({ch.title} cancelled)", cmd.reply_to, cmd.id, caller.signature),
            deps,
            deps.now(),
        )
        freed.append(name)
    return freed


def _state(ch: Challenge, now) -> str:
    if now < ch.opens_at:
        return "upcoming"
    if now < ch.closes_at:
        return "open"
    return "closed" if "close" in ch.done else "closing"


def _winners(ch: Challenge) -> str:
    boards = (ch.results or {}).get("boards", [])
    firsts = [
        f"{b['leaderboard']} {b['gpu']}: {e['name']}"
        for b in boards
        for e in b["podium"]
        if e["rank"] == 1 and e["verdict"] == "verified"
    ]
    return "; ".join(firsts) or "none verified"


def _words(ch: Challenge, deps: Deps) -> str:
    news = challenge_news(ch.announce, deps.settings.announce)
    where = (
        f" News goes to {', '.join(news)}."
        if news
        else " Nothing will be announced: give --announce platform:channel (or set KERNELRANK_ANNOUNCE)."
    )
    return (
        f"**{ch.title}**: {', '.join(ch.leaderboards)} from {ch.opens_at:%Y-%m-%d %H:%M} to "
        f"{ch.closes_at:%Y-%m-%d %H:%M} UTC ({time_left(ch.closes_at, deps.now())}).{where}"
    )


def _detail(ch: Challenge) -> dict:
    return {
        "challenge": ch.title,
        "leaderboards": ch.leaderboards,
        "opens": ch.opens_at.isoformat(),
        "closes": ch.closes_at.isoformat(),
        "announce": ch.announce,
    }
