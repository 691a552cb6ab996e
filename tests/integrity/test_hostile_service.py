"""Hostile input at the service: the real core on a real nats-server (tests/e2e's system, a fake runner).

Each refusal is one clear sentence with what to do next; nothing is stored for it, and the service goes
on answering. Harness-level hostile submissions are in test_hostile_harness.py.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from cases import PROBLEMS

from core.contracts.commands import query_command, submit_command
from core.contracts.messages import CommandKind, Platform, Reply, ReplyTo, Tone
from core.service.leaderboards import leaderboard_for
from harness import load_problem
from runners.fake import FakeRunner

CORRECT = (PROBLEMS["fixture"].parent / "submissions" / "correct.py").read_text()
_SENTENCE_MAX = 400


def _text(reply: Reply) -> str:
    return "\n".join(p.text for p in reply.parts)


def _refused(reply: Reply, words: str) -> str:
    text = _text(reply)
    assert reply.tone is Tone.ERROR and len(reply.parts) == 1, text
    assert words.lower() in text.lower(), text
    assert len(text) < _SENTENCE_MAX and text.rstrip().endswith((".", ")")), text
    return text


@pytest.fixture
async def system(make_system):
    system = await make_system(FakeRunner(), rate_limit=3, max_source_bytes=4096)
    yield system
    accepted = getattr(system, "accepted", 0)
    assert system.store.stats().submissions == accepted, "a refused submission was stored"
    assert (await system.ask("zed", CommandKind.LIST)).tone is not Tone.ERROR  # the core still answers


async def _submit(system, content: bytes, file_name: str = "k.py", **kwargs) -> Reply:
    cmd = submit_command(system.actor("eve"), ReplyTo(Platform.DISCORD, system.route), file_name, content, **kwargs)
    return await system.bus.request(cmd, timeout_s=10)


async def test_an_empty_file(system):
    _refused(await _submit(system, b"", leaderboard="vectoradd"), "is empty")


async def test_a_binary_file(system):
    _refused(await _submit(system, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", leaderboard="vectoradd"), "not UTF-8")


async def test_a_file_with_nul_bytes(system):
    _refused(await _submit(system, b"import torch\n\x00\x00\n", leaderboard="vectoradd"), "binary file")


async def test_a_file_over_the_size_limit(system):
    _refused(await _submit(system, b"x = 1\n" * 2000, leaderboard="vectoradd"), "limit is 4 KiB")


async def test_a_file_that_is_not_utf8(system):
    _refused(await _submit(system, "x = 'café'\n".encode("latin-1"), leaderboard="vectoradd"), "not UTF-8")


async def test_a_file_with_the_wrong_extension(system):
    _refused(await _submit(system, CORRECT.encode(), "kernel.exe", leaderboard="vectoradd"), "not a kernel file")


async def test_an_unknown_leaderboard(system):
    _refused(await _submit(system, CORRECT.encode(), leaderboard="nope"), "no leaderboard 'nope'")


async def test_an_unknown_gpu(system):
    _refused(await _submit(system, CORRECT.encode(), leaderboard="vectoradd", gpu=["B300"]), "does not offer B300")


async def test_a_closed_leaderboard(system):
    problem = load_problem(PROBLEMS["fixture"], name="closed")
    past = datetime.now(UTC) - timedelta(days=1)
    system.store.upsert_leaderboard(dataclasses.replace(leaderboard_for(problem, ["CPU"]), deadline=past))
    _refused(await _submit(system, CORRECT.encode(), leaderboard="closed"), "closed on")


async def test_the_rate_limit(system):
    system.accepted = 3
    for _ in range(3):
        assert (await _submit(system, CORRECT.encode(), leaderboard="vectoradd")).tone is not Tone.ERROR
    _refused(await _submit(system, CORRECT.encode(), leaderboard="vectoradd"), "in the last minute")


async def test_unicode_names_are_accepted_and_kept(system):
    system.accepted = 1
    zoe = dataclasses.replace(system.actor("eve"), display_name="Zoë 🚀 Ωmega")
    cmd = submit_command(
        zoe, ReplyTo(Platform.DISCORD, system.route), "kérnel_🚀.py", CORRECT.encode(), leaderboard="vectoradd"
    )
    accepted = await system.bus.request(cmd, timeout_s=10)
    assert accepted.tone is not Tone.ERROR, _text(accepted)
    await system.finals({run["run_id"] for run in accepted.data["runs"]})
    detail = await system.bus.request(
        query_command(
            zoe, ReplyTo(Platform.DISCORD, system.route), CommandKind.SUBMISSION, id=str(accepted.data["submission_id"])
        ),
        timeout_s=10,
    )
    assert "kérnel_🚀.py" in detail.title and "Zoë 🚀 Ωmega" in detail.title


async def test_a_very_long_leaderboard_name(system):
    text = _refused(await _submit(system, CORRECT.encode(), leaderboard="v" * 10_000), "no leaderboard")
    assert "10,000 characters" in text


async def test_a_very_long_file_name(system):
    _refused(await _submit(system, CORRECT.encode(), "k" * 5000 + ".py", leaderboard="vectoradd"), "rename the file")


async def test_a_very_long_argument(system):
    text = _refused(
        await _submit(system, CORRECT.encode(), leaderboard="vectoradd", mode="turbo" * 20_000), "Unknown mode"
    )
    assert "100,000 characters" in text


async def test_many_unknown_gpus(system):
    gpus = [f"GPU{i}" for i in range(1000)]
    _refused(await _submit(system, CORRECT.encode(), leaderboard="vectoradd", gpu=gpus), "does not offer GPU0")


async def test_a_submission_without_a_file(system):
    cmd = submit_command(system.actor("eve"), ReplyTo(Platform.DISCORD, system.route), "k.py", b"", leaderboard="x")
    cmd = dataclasses.replace(cmd, attachment=None)
    _refused(await system.bus.request(cmd, timeout_s=10), "Attach the kernel file")


@pytest.mark.parametrize(
    "header, words",
    [
        ("#!POPCORN leaderboard ../../etc/passwd", "no leaderboard '../../etc/passwd'"),
        ("#!POPCORN leaderboard vectoradd\n#!POPCORN gpu CPU H100; rm -rf /", "does not offer H100"),
        ("#!POPCORN leaderboard vectoradd\n#!POPCORN mode admin", "Unknown mode 'admin'"),
        ("#!POPCORN leaderboard " + "x" * 3000, "3,000 characters"),
        ("#!POPCORN leaderboard vectoradd\x1b[2J\x07", "no leaderboard"),
    ],
    ids=["path-traversal", "shell-in-gpus", "unknown-mode", "huge-header", "control-characters"],
)
async def test_forged_popcorn_headers(system, header, words):
    _refused(await _submit(system, f"{header}\n{CORRECT}".encode()), words)


async def test_headers_hidden_below_the_scanned_lines_are_ignored(system):
    source = "\n" * 40 + "#!POPCORN leaderboard vectoradd\n" + CORRECT
    _refused(await _submit(system, source.encode()), "Name a leaderboard")
