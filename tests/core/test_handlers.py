"""Handlers called directly: a real DuckDB file, the seed problems loaded into it, and a job publisher that
collects what it is given (no NATS, no service loop): what the house plan's ``build_deps`` is for."""

from __future__ import annotations

from handler_kit import CORRECT, actor, ask

from core.contracts.commands import submit_command
from core.contracts.messages import CommandKind, Platform, ReplyTo
from core.contracts.registry import COMMANDS
from core.service.handlers import HANDLERS, dispatch


def test_every_registry_command_has_a_handler_and_every_handler_a_command() -> None:
    assert {spec.kind for spec in COMMANDS} == set(HANDLERS)


async def test_a_submission_is_stored_queued_once_per_gpu_and_listed_as_mine(deps) -> None:
    deps, jobs = deps
    cmd = submit_command(
        actor("ada"),
        ReplyTo(Platform.DISCORD, "c1"),
        "k.py",
        CORRECT,
        leaderboard="vectoradd",
        gpu=["CPU,H100"],
        mode="test",
    )
    accepted = await dispatch(cmd, deps)
    assert accepted.data["leaderboard"] == "vectoradd", accepted
    assert sorted(job.gpu for job in jobs) == ["CPU", "H100"]  # a comma list names two GPUs
    assert {job.run_id for job in jobs} == set(deps.runs.in_flight)  # the one record of waiting runs
    again = await dispatch(cmd, deps)  # the same command again: no second job
    assert len(jobs) == 2 and again.data["submission_id"] == accepted.data["submission_id"]
    mine = await ask(deps, "ada", CommandKind.MINE, leaderboard="vectoradd")
    assert f"#{accepted.data['submission_id']}" in str(mine.parts)


async def test_unknown_leaderboard_and_gpu_are_refused_in_one_sentence(deps) -> None:
    deps, jobs = deps
    missing = await ask(deps, "ada", CommandKind.SHOW, leaderboard="nope")
    assert missing.data["error"] == "not_found" and "`list` shows" in missing.parts[0].text
    cmd = submit_command(
        actor("ada"), ReplyTo(Platform.DISCORD, "c1"), "k.py", CORRECT, leaderboard="vectoradd", gpu=["B200"]
    )
    refused = await dispatch(cmd, deps)
    assert "does not offer B200" in refused.parts[0].text and jobs == []


async def test_admin_commands_are_refused_to_others_before_their_handler(deps) -> None:
    deps, _ = deps
    refused = await ask(deps, "ada", CommandKind.ISSUE_TOKEN, name="grace")
    assert refused.data["error"] == "forbidden" and "Only admins" in refused.parts[0].text
    issued = await ask(deps, "boss", CommandKind.ISSUE_TOKEN, name="grace")
    assert issued.data["token"].startswith("kr_")
