"""Helpers for tests of the HTTP API and the terminal client: tokens, the API process on a free port, the CLI, a
whole `kernelrank up`."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from adapters.api.serve import run_api
from core.contracts.config import Settings
from core.contracts.messages import CommandKind, Tone

REPO = Path(__file__).resolve().parents[2]
SUBMISSIONS = REPO / "tests" / "fixtures" / "harness" / "submissions"


async def token_of(system, user: str) -> str:
    """A token got the way a Discord user gets one: `/leaderboard token`."""
    reply = await system.ask(user, CommandKind.TOKEN)
    assert reply.tone is not Tone.ERROR and reply.ephemeral, reply.parts
    return reply.data["token"]


@contextlib.asynccontextmanager
async def serving_api(settings: Settings, nats_url: str) -> AsyncIterator[str]:
    """``kernelrank api`` on a free port of this host (its real entry point, on this loop); yields its URL."""
    settings = dataclasses.replace(settings, api_host="127.0.0.1", api_port=0)
    settings.api_url_file.unlink(missing_ok=True)
    stop = asyncio.Event()
    task = asyncio.create_task(run_api(settings, nats_url, stop))
    for _ in range(500):
        if settings.api_url_file.is_file() or task.done():
            break
        await asyncio.sleep(0.02)
    if task.done():
        await task
    try:
        yield settings.api_url_file.read_text()
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def _client_env(cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """A person's environment for ``kernelrank``: no settings of ours but ``env``, a login file under ``cwd``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KERNELRANK_")}
    return {
        **clean,
        "PYTHONPATH": str(REPO),
        "XDG_CONFIG_HOME": str(cwd / "config"),
        "XDG_STATE_HOME": str(cwd / "state"),
        "KERNELRANK_HOME": str(cwd / "var"),
        **env,
    }


async def kernelrank(cwd: Path, *args: str, stdin: str = "", **env: str) -> tuple[int, str]:
    """Run ``kernelrank ARGS`` as a person would; ``env`` adds settings (a login file under ``cwd`` only)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "core.launch.main",
        *args,
        cwd=cwd,
        env=_client_env(cwd, env),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(stdin.encode()), 120)
    return proc.returncode, out.decode()


async def kernelrank_on_a_terminal(
    cwd: Path, *args: str, seen: Callable[[str], None] = lambda _: None, **env: str
) -> tuple[int, str]:
    """``kernelrank ARGS`` writing to a pseudo-terminal, as in a person's terminal window: what it wrote, escape
    codes included. ``seen`` gets what is on the terminal so far each time more comes (from another thread)."""
    main, side = os.openpty()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "core.launch.main",
            *args,
            cwd=cwd,
            env=_client_env(cwd, {"TERM": "xterm", "COLUMNS": "100", **env}),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=side,
            stderr=side,
        )
    finally:
        os.close(side)  # the child's copy is the last one: its exit ends the reading below
    try:
        out = await asyncio.wait_for(asyncio.to_thread(_read_until_closed, main, seen), 120)
    finally:
        os.close(main)
    return await asyncio.wait_for(proc.wait(), 30), out.decode()


def _read_until_closed(fd: int, seen: Callable[[str], None]) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every writer of the terminal has gone
            break
        if not chunk:
            break
        chunks.append(chunk)
        seen(b"".join(chunks).decode(errors="replace"))
    return b"".join(chunks)


FIXTURE_PROBLEMS = REPO / "tests" / "fixtures" / "harness"


async def wait_for_line(proc: asyncio.subprocess.Process, words: str, log: list[str], timeout_s: float) -> None:
    async def read() -> None:
        while True:
            line = await proc.stdout.readline()
            if not line:
                raise AssertionError("kernelrank up ended:\n" + "".join(log))
            log.append(line.decode())
            if words in log[-1]:
                return

    await asyncio.wait_for(read(), timeout_s)


async def start_up(tmp_path: Path) -> asyncio.subprocess.Process:
    """``kernelrank up --backend fake`` in ``tmp_path`` with the vectoradd fixture as its only problem."""
    problems = tmp_path / "problems"
    problems.mkdir()
    (problems / "vectoradd").symlink_to(FIXTURE_PROBLEMS / "vectoradd")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELRANK_")}
    env.update(
        PYTHONPATH=str(REPO),
        KERNELRANK_HOME=str(tmp_path / "var"),
        KERNELRANK_API_PORT="0",
        KERNELRANK_PROBLEMS_DIR=str(problems),
        KERNELRANK_USER="ada",
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        KERNELRANK_LOG_LEVEL="DEBUG",
    )
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "core.launch.main",
        "up",
        "--backend",
        "fake",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
