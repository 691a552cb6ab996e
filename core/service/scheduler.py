"""The challenge scheduler: opens, reminds and closes challenges at their times, each action exactly once.

Every ``scheduler_tick_s`` it reads the challenges and runs each due action: ``open`` at the opening, a reminder
``remind-Nh`` N hours before the close for each of ``reminders`` (24 and 1 by default), and ``close`` (freeze,
verify the podium, announce the winners: ``core.service.podium``). An action is recorded in the database when it
starts and when it is done, so a restart never runs a done action again, and a core that was down at a challenge's
time runs it when it comes back. An action that started and never finished (a crash midway) runs again; its
announcements carry ids made from the challenge and the action, so the bus drops a repeat published within its
duplicate window. A core back after the close skips the opening and the reminders it missed: only the close is
announced. The close waits while ranked runs sent before it have no result yet (a submission in on time counts, even
when the core was down or the queue long), for at most ``close_wait_s`` after the close. Time comes from
``Deps.now``, so tests move a clock instead of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from core.contracts import reply_parts
from core.contracts.messages import Reply, Tone
from core.service.admin_news import tell_admins
from core.service.announce import announcement_targets, challenge_news
from core.service.challenge_report import results_parts
from core.service.deps import Deps
from core.service.podium import close_standings, team_points
from harness.result import Mode
from storage.records import Challenge

log = logging.getLogger(__name__)
AUDIT_ACTOR = "kernelrank scheduler"  # who the audit log names for what the scheduler did

Publish = Callable[[Reply], Awaitable[object]]


def actions(ch: Challenge, reminder_hours: list[float]) -> list[tuple[str, datetime]]:
    """The challenge's scheduled actions and their times, in order."""
    reminders = [(f"remind-{hours:g}h", ch.closes_at - timedelta(hours=hours)) for hours in reminder_hours]
    return sorted(
        [("open", ch.opens_at), *[(a, at) for a, at in reminders if at > ch.opens_at], ("close", ch.closes_at)],
        key=lambda pair: pair[1],
    )


class Scheduler:
    def __init__(self, deps: Deps, publish: Publish) -> None:
        self.deps, self.publish = deps, publish
        self.reminder_hours = [float(h) for h in deps.settings.reminders]
        self._waited: set[int] = set()  # challenges whose close waits for runs (logged once)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.tick()
            except Exception:  # one bad tick must not stop the challenges; the next one tries again
                log.exception("the challenge scheduler's tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.deps.settings.scheduler_tick_s)

    async def tick(self) -> None:
        """Run every action that is due and not done."""
        store = self.deps.db.store.challenges
        for ch in await self.deps.db.read(store.listed):
            if ch.cancelled_at is not None or "close" in ch.done:
                continue
            for action, at in actions(ch, self.reminder_hours):
                if action in ch.done or at > self.deps.now():
                    continue
                if action == "close" and await self._still_judging(ch):
                    break  # ranked runs sent before the close count: crown once they have their results
                await self.deps.db.write(store.started, ch.id, action, self.deps.now())
                if action == "close":
                    await self._close(ch)
                else:
                    announced = self.deps.now() < ch.closes_at  # missed ones are not announced after the close
                    if announced:
                        await self._announce(ch, action, *self._news(ch, action))
                    await self.deps.db.write(
                        self.deps.db.store.audit,
                        AUDIT_ACTOR,
                        f"challenge {action}",
                        {"challenge": ch.title, "announced": announced},
                    )
                await self.deps.db.write(store.done, ch.id, action, self.deps.now())
                log.info("challenge %s: %s done", ch.title, action)

    async def _still_judging(self, ch: Challenge) -> bool:
        """Whether ranked runs on the challenge's leaderboards sent before its close still wait for a result (and
        the close is less than ``close_wait_s`` ago: a run that never ends must not hold the winners back)."""
        if self.deps.now() >= ch.closes_at + timedelta(seconds=self.deps.settings.close_wait_s):
            return False
        unfinished = await self.deps.db.read(self.deps.db.store.unfinished_runs)
        waiting = [
            run
            for run in unfinished
            if run.leaderboard in ch.leaderboards and run.mode == Mode.RANKED.value and run.created_at <= ch.closes_at
        ]
        if waiting and ch.id not in self._waited:
            self._waited.add(ch.id)
            log.info("%s closes once its %d ranked runs sent before the close have results", ch.title, len(waiting))
        return bool(waiting)

    async def _close(self, ch: Challenge) -> None:
        boards = await close_standings(self.deps, ch.leaderboards, ch.closes_at)
        teams = team_points(boards, await self.deps.db.read(self.deps.db.store.challenges.teams))
        closed = dataclasses.replace(
            ch, results={"closed_at": self.deps.now().isoformat(), "boards": boards, "teams": teams}
        )
        await self.deps.db.write(self.deps.db.store.challenges.update, closed)
        held = sum(e["verdict"] == "held" for b in boards for e in b["podium"])
        await self.deps.db.write(
            self.deps.db.store.audit, AUDIT_ACTOR, "challenge close", {"challenge": ch.title, "held": held}
        )
        if held:
            note = f"{held} podium {'entry' if held == 1 else 'entries'} of **{ch.title}** held at its close"
            await tell_admins(
                self.deps,
                "held",
                ch.id,
                f"{ch.title}: held for review",
                [reply_parts.text(f"{note}; `admin review` lists them.")],
            )
        await self._announce(ch, "close", f"🏆 {ch.title}: the winners", results_parts(closed.results or {}))

    def _news(self, ch: Challenge, action: str) -> tuple[str, list]:
        if action == "open":
            return (
                f"{ch.title} is open",
                [
                    reply_parts.text(
                        f"**{ch.title}** is open until {ch.closes_at:%Y-%m-%d %H:%M} UTC: "
                        f"{', '.join(ch.leaderboards)}. `task LEADERBOARD` shows each problem; good luck!"
                    )
                ],
            )
        hours = action.removeprefix("remind-")
        return (
            f"{ch.title} closes in {hours}",
            [
                reply_parts.text(
                    f"**{ch.title}** closes in {hours.replace('h', ' h')} ({ch.closes_at:%Y-%m-%d %H:%M} UTC). Ranked "
                    f"submissions to {', '.join(ch.leaderboards)} count until then."
                )
            ],
        )

    async def _announce(self, ch: Challenge, action: str, title: str, parts: list) -> None:
        for target in announcement_targets(challenge_news(ch.announce, self.deps.settings.announce)):
            await self.publish(
                Reply(
                    reply_to=target,
                    title=title,
                    parts=parts,
                    tone=Tone.SUCCESS,
                    data={"kind": "announcement", "challenge": ch.title, "action": action},
                    id=f"challenge-{ch.id}-{action}-{target.platform.value}-{target.channel}",
                )
            )
