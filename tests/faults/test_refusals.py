"""Refusals that keep the promise: nothing half-stored, nothing evaluated, the same answer when asked again."""

from __future__ import annotations

from pathlib import Path

from fault_kit import CountingRunner

from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, CommandKind, Platform, ReplyTo, Tone
from core.service.acceptance import NOT_QUEUED, REFUSED_AGAIN

CORRECT = (Path(__file__).parents[1] / "fixtures" / "harness" / "submissions" / "correct.py").read_bytes()


def words(reply) -> str:
    return " ".join(part.text for part in reply.parts)


async def test_a_full_queue_refuses_the_submission_withdraws_it_and_says_so_again(make_system):
    runner = CountingRunner(delay_s=60)  # the worker sits on its jobs: the queue fills up
    system = await make_system(runner)
    await system.bus.ensure_streams(["CPU"], jobs_max_bytes=12 * 1024)
    refused = None
    for index in range(40):
        cmd = submit_command(
            system.actor(f"user{index}"),
            ReplyTo(Platform.DISCORD, system.route),
            "k.py",
            CORRECT + f"# {index}\n".encode(),
            leaderboard="vectoradd",
        )
        reply = await system.bus.request(cmd, timeout_s=20)
        if reply.tone is Tone.ERROR:
            refused = cmd
            break
    assert refused is not None, "the queue never filled"
    assert "CPU queue is full" in words(reply) and "nothing was queued" in words(reply)
    again = await system.bus.request(refused, timeout_s=20)  # the sender asks again: same truth
    assert again.tone is Tone.ERROR and words(again) == REFUSED_AGAIN
    detail = next(d for i in range(1, 60) if (d := system.store.submission_detail(i)) and d.command_id == refused.id)
    assert [(run.info.state, run.worker) for run in detail.runs] == [("done", NOT_QUEUED)]
    assert runner.evaluations[detail.runs[0].info.run_id] == 0
    assert system.store.unreplied([detail.runs[0].info.run_id]) == set()  # its answer was the refusal


async def test_overlong_names_and_ids_are_refused_with_what_to_shorten(make_system):
    system = await make_system(CountingRunner())
    cases = [
        (Actor(Platform.DISCORD, "ada", display_name="A" * 5000), "display name is 5,000 characters"),
        (Actor(Platform.DISCORD, "u" * 10_000), "user id is 10,000 characters"),
    ]
    for actor, expected in cases:
        cmd = submit_command(actor, ReplyTo(Platform.DISCORD, system.route), "k.py", CORRECT, leaderboard="vectoradd")
        reply = await system.bus.request(cmd, timeout_s=20)
        assert reply.tone is Tone.ERROR and expected in words(reply), (expected, words(reply))
    long_route = query_command(Actor(Platform.DISCORD, "ada"), ReplyTo(Platform.DISCORD, "r" * 500), CommandKind.LIST)
    assert "reply channel is 500 characters" in words(await system.bus.request(long_route, timeout_s=20))
    about = query_command(
        Actor(Platform.DISCORD, "ada"),
        ReplyTo(Platform.DISCORD, system.route),
        CommandKind.HISTORY,
        leaderboard="vectoradd",
        user="x" * 1000,
    )
    assert "asked-about user id is 1,000 characters" in words(await system.bus.request(about, timeout_s=20))
    assert system.store.stats().submissions == 0 and system.store.stats().people == 0


async def test_a_command_sent_again_is_not_counted_against_the_rate_limit(make_system):
    system = await make_system(CountingRunner(), rate_limit=1)
    cmd = submit_command(
        system.actor("ada"), ReplyTo(Platform.DISCORD, system.route), "k.py", CORRECT, leaderboard="vectoradd"
    )
    first = await system.bus.request(cmd, timeout_s=20)
    again = await system.bus.request(cmd, timeout_s=20)  # a client retrying after its connection dropped
    assert first.tone is not Tone.ERROR and again.data == first.data
    other = submit_command(
        system.actor("ada"),
        ReplyTo(Platform.DISCORD, system.route),
        "k.py",
        CORRECT + b"# 2\n",
        leaderboard="vectoradd",
    )
    assert "in the last minute" in words(await system.bus.request(other, timeout_s=20))
