"""Helpers for calling handlers directly: a job collector, a Discord actor and a one-line way to ask."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from core.contracts.commands import query_command
from core.contracts.messages import Actor, CommandKind, Platform, Reply, ReplyTo, RunJob
from core.service.deps import Deps
from core.service.handlers import dispatch

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"
CORRECT = b"def custom_kernel(data):\n    a, b = data\n    return a + b\n"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


class Collected(list[RunJob]):
    async def publish(self, job: RunJob) -> bool:
        self.append(job)
        return True


def actor(user: str, platform: Platform = Platform.DISCORD) -> Actor:
    return Actor(platform=platform, user_id=user, display_name=user.title())


async def ask(deps: Deps, user: str, kind: CommandKind, platform: Platform = Platform.DISCORD, **args) -> Reply:
    return await dispatch(query_command(actor(user, platform), ReplyTo(platform, "c1"), kind, **args), deps)
