"""Handlers called directly: a real DuckDB file, the seed problems loaded into it, and a job publisher that
collects what it is given (no NATS, no service loop): what the house plan's ``build_deps`` is for."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.contracts.commands import query_command, submit_command
from core.contracts.config import Settings
from core.contracts.messages import Actor, CommandKind, Platform, Reply, ReplyTo, RunJob
from core.contracts.registry import COMMANDS
from core.service.bootstrap import build_deps
from core.service.db import Database
from core.service.deps import Deps
from core.service.handlers import HANDLERS, dispatch
from core.service.leaderboards import load_new_problems
from storage.store import Store

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"
CORRECT = b"def custom_kernel(data):\n    a, b = data\n    return a + b\n"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


class Collected(list[RunJob]):
    async def publish(self, job: RunJob) -> bool:
        self.append(job)
        return True


@pytest.fixture
async def deps(tmp_path: Path) -> AsyncIterator[tuple[Deps, Collected]]:
    problems = tmp_path / "problems"
    shutil.copytree(FIXTURES / "vectoradd", problems / "vectoradd")
    settings = Settings(home=tmp_path / "var", problems_dir=problems, admins=["discord:boss"])
    db = Database(Store(settings.database))
    await db.write(load_new_problems, db.store, problems, ["CPU", "H100"])
    jobs = Collected()
    built = build_deps(db, settings, jobs.publish, now=lambda: NOW)
    yield built, jobs
    await built.writer.close()
    await db.close()


def _actor(user: str) -> Actor:
    return Actor(platform=Platform.DISCORD, user_id=user, display_name=user.title())


async def _ask(deps: Deps, user: str, kind: CommandKind, **args) -> Reply:
    return await dispatch(query_command(_actor(user), ReplyTo(Platform.DISCORD, "c1"), kind, **args), deps)


def test_every_registry_command_has_a_handler_and_every_handler_a_command() -> None:
    assert {spec.kind for spec in COMMANDS} == set(HANDLERS)


async def test_a_submission_is_stored_queued_once_per_gpu_and_listed_as_mine(deps) -> None:
    deps, jobs = deps
    cmd = submit_command(_actor("ada"), ReplyTo(Platform.DISCORD, "c1"), "k.py", CORRECT, leaderboard="vectoradd",
                         gpus=["CPU,H100"], mode="test")
    accepted = await dispatch(cmd, deps)
    assert accepted.data["leaderboard"] == "vectoradd", accepted
    assert sorted(job.gpu for job in jobs) == ["CPU", "H100"]          # a comma list names two GPUs
    assert {job.run_id for job in jobs} == set(deps.runs.in_flight)     # the one record of waiting runs
    again = await dispatch(cmd, deps)                                    # the same command again: no second job
    assert len(jobs) == 2 and again.data["submission_id"] == accepted.data["submission_id"]
    mine = await _ask(deps, "ada", CommandKind.MINE, leaderboard="vectoradd")
    assert f"#{accepted.data['submission_id']}" in str(mine.parts)


async def test_unknown_leaderboard_and_gpu_are_refused_in_one_sentence(deps) -> None:
    deps, jobs = deps
    missing = await _ask(deps, "ada", CommandKind.SHOW, leaderboard="nope")
    assert missing.data["error"] == "not_found" and "`list` shows" in missing.parts[0].text
    cmd = submit_command(_actor("ada"), ReplyTo(Platform.DISCORD, "c1"), "k.py", CORRECT, leaderboard="vectoradd",
                         gpus=["B200"])
    refused = await dispatch(cmd, deps)
    assert "does not offer B200" in refused.parts[0].text and jobs == []


async def test_admin_commands_are_refused_to_others_before_their_handler(deps) -> None:
    deps, _ = deps
    refused = await _ask(deps, "ada", CommandKind.ISSUE_TOKEN, name="grace")
    assert refused.data["error"] == "forbidden" and "Only admins" in refused.parts[0].text
    issued = await _ask(deps, "boss", CommandKind.ISSUE_TOKEN, name="grace")
    assert issued.data["token"].startswith("kr_")
