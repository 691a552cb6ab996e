"""The terminal client as a person runs it: a `kernelrank` subprocess against a running system."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from runners.local import LocalRunner

REPO = Path(__file__).resolve().parents[2]
SUBMISSIONS = REPO / "tests" / "fixtures" / "harness" / "submissions"


async def kernelrank(url: str, cwd: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "KERNELRANK_NATS_URL": url, "KERNELRANK_USER": "ada", "PYTHONPATH": str(REPO)}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "core.main", *args, cwd=cwd, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode, out.decode()


@pytest.mark.slow
async def test_submit_shows_progress_then_the_verdict_and_score(make_system, tmp_path):
    system = await make_system(LocalRunner())
    code, out = await kernelrank(system.settings.nats_url, tmp_path, "submit", str(SUBMISSIONS / "correct.py"),
                                 "--leaderboard", "vectoradd")
    assert code == 0, out
    assert "queued as #1 on CPU, nothing ahead" in out
    assert "CPU: " in out                         # at least one live progress line
    assert "ranked passed" in out and "Score" in out and "New #1!" in out

    code, out = await kernelrank(system.settings.nats_url, tmp_path, "submit", str(SUBMISSIONS / "wrong_output.py"),
                                 "-l", "vectoradd", "--mode", "test")
    assert code == 1, out
    assert "test failed" in out

    code, out = await kernelrank(system.settings.nats_url, tmp_path, "show", "vectoradd")
    assert code == 0 and "ada" in out.lower()


async def test_clear_errors_and_exit_codes(make_system, tmp_path):
    system = await make_system(LocalRunner())
    code, out = await kernelrank(system.settings.nats_url, tmp_path, "show", "nope")
    assert code == 1 and "no leaderboard 'nope'" in out
    code, out = await kernelrank(system.settings.nats_url, tmp_path, "submit", str(tmp_path / "missing.py"))
    assert code != 0 and "cannot read" in out
    code, out = await kernelrank(system.settings.nats_url, tmp_path, "template", "vectoradd", "-o",
                                 str(tmp_path / "mine.py"))
    assert code == 1 and "no templates" in out    # the fixture problem ships none


async def test_core_down_answers_at_once(nats_url, tmp_path):
    code, out = await kernelrank(nats_url, tmp_path, "list")
    assert code == 1 and "not running" in out
