"""A leaderboard's deadline, closed like a challenge's: its own one-leaderboard challenge, kept in step.

Every change to a leaderboard (``admin create``, ``update``, ``close``, ``reopen``, ``delete``) passes here. A
leaderboard with a deadline and no challenge of an admin's around it gets a challenge of its own, titled with its
name and closing at its deadline, so the scheduler (``core.service.scheduler``) freezes it, verifies its podium and
announces the winners exactly once, as it does for any challenge; ``challenge NAME`` shows its standings, then its
results. The news goes to the channel the command came from (in chat) and to ``KERNELRANK_ANNOUNCE``. A deadline
removed, a leaderboard deleted or put in an admin's challenge cancels its own challenge; a closed leaderboard
reopened keeps its past round under a dated title and starts a new one. Whichever challenge crowned it, a
leaderboard open again after the close starts a new round of its rankings (``core.service.rounds``). A deadline
that never passed here (set before challenges existed) gets its challenge when the core starts
(``adopt_deadlines``).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from core.contracts.messages import Platform, ReplyTo
from core.service.announce import CHAT_PLATFORMS
from core.service.deps import Deps
from core.service.rounds import note_reopening
from storage.records import Challenge, Leaderboard


async def keep_in_step(lb: Leaderboard, reply_to: ReplyTo, deps: Deps, deleted: bool = False) -> None:
    """Make the leaderboard's own challenge match ``lb`` as just saved (or deleted); ``reply_to``: where from."""
    store, now = deps.db.store.challenges, deps.now()
    if not deleted:
        await note_reopening(lb, deps)
    own = await deps.db.read(store.deadline_of, lb.name)
    deadline = None if deleted or await _in_a_challenge(lb.name, deps) else lb.deadline
    if own is not None and "close" in own.done:
        if deadline is None or deadline == own.closes_at:
            return
        await deps.db.write(store.update, dataclasses.replace(own, title=_dated(own)))  # the past round, kept
        own = None
    if own is None:
        if deadline is not None:
            opens = min(lb.opens_at or now, deadline)
            await deps.db.write(
                store.add,
                Challenge(
                    title=await _free_title(lb, deadline, deps),
                    leaderboards=[lb.name],
                    opens_at=opens,
                    closes_at=deadline,
                    announce=_channels(reply_to, deps),
                    created_by=lb.created_by,
                    deadline_of=lb.name,
                    # open already, as the command's answer says: no "is open" news on top
                    done=frozenset({"open"}) if opens <= now else frozenset(),
                ),
                now,
            )
        return
    if deadline is None:
        if own.cancelled_at is None:
            await deps.db.write(store.update, dataclasses.replace(own, cancelled_at=now))
        return
    announce = list(dict.fromkeys([*own.announce, *_channels(reply_to, deps)]))
    await deps.db.write(
        store.update,
        dataclasses.replace(
            own,
            closes_at=deadline,
            cancelled_at=None,
            opens_at=min(lb.opens_at or own.opens_at, deadline),
            announce=announce,
        ),
    )


async def adopt_deadlines(deps: Deps) -> list[str]:
    """At the core's start: each leaderboard whose deadline is still ahead, in no admin's challenge, that has never
    had a challenge of its own (its deadline set before challenges existed, or written into the database) gets
    one; their names. A deadline already past was never a round here, so nothing is crowned for it."""
    adopted = []
    for summary in await deps.db.read(deps.db.store.list_leaderboards):
        if summary.deadline is None or summary.deadline <= deps.now():
            continue
        if await deps.db.read(deps.db.store.challenges.deadline_of, summary.name) is not None:
            continue
        if await _in_a_challenge(summary.name, deps):
            continue
        if (lb := await deps.db.read(deps.db.store.get_leaderboard, summary.name)) is not None:
            await keep_in_step(lb, ReplyTo(Platform.CLI, "start"), deps)  # news to KERNELRANK_ANNOUNCE alone
            adopted.append(lb.name)
    return adopted


def _dated(ch: Challenge) -> str:
    return f"{ch.title} ({ch.closes_at:%Y-%m-%d %H:%M})"


async def _in_a_challenge(name: str, deps: Deps) -> bool:
    """Whether an admin's challenge, not closed nor cancelled, holds the leaderboard (that one crowns it)."""
    return any(
        name in ch.leaderboards and ch.deadline_of is None and ch.cancelled_at is None and "close" not in ch.done
        for ch in deps.db.store.challenges.listed()
    )


async def _free_title(lb: Leaderboard, deadline: datetime, deps: Deps) -> str:
    """The leaderboard's name, or with its deadline when another challenge has that title already."""
    taken = await deps.db.read(deps.db.store.challenges.get, lb.name)
    return lb.name if taken is None else f"{lb.name} ({deadline:%Y-%m-%d %H:%M})"


def _channels(reply_to: ReplyTo, deps: Deps) -> list[str]:
    here = [f"{reply_to.platform.value}:{reply_to.channel}"] if reply_to.platform in CHAT_PLATFORMS else []
    return list(dict.fromkeys([*here, *(e.strip() for e in deps.settings.announce)]))
