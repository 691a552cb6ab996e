"""What a bench runs of kernelrank: an embedded nats-server and the system's own commands as child processes, in an
environment of the bench's own (its home and problems under one work folder, the CPU pool, quiet logs)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from core.launch.natsserver import EmbeddedNats  # noqa: E402


@dataclass
class System:
    url: str  # the NATS server's
    env: dict[str, str]  # the commands' environment
    procs: dict[str, subprocess.Popen]  # by the name the bench gave them
    nats_pid: int


def system_env(work: Path, nats_url: str, **extra: str) -> dict[str, str]:
    """The environment of a bench's core and API: its own home and problems under ``work``, the CPU pool, quiet logs."""
    return {
        **os.environ,
        "KERNELRANK_NATS_URL": nats_url,
        "KERNELRANK_HOME": str(work / "var"),
        "KERNELRANK_PROBLEMS_DIR": str(work / "problems"),
        "KERNELRANK_GPUS": "CPU",
        "KERNELRANK_API_PORT": "0",
        "KERNELRANK_LOG_LEVEL": "WARNING",
        **extra,
    }


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """``kernelrank ARGS`` as a child, its output to ``log``."""
    return subprocess.Popen(
        [sys.executable, "-m", "core.launch.main", *args],
        cwd=REPO,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


@contextlib.contextmanager
def running(work: Path, commands: dict[str, list[str]], **extra: str) -> Iterator[System]:
    """A nats-server and ``commands`` (name -> arguments, each logging to ``work/<name>.log``) under ``work``, with
    ``extra`` settings; stopped on the way out, the commands in the reverse of their order, then the server."""
    nats = EmbeddedNats()
    url = nats.start(work / "run", work / "nats")
    env = system_env(work, url, **extra)
    procs: dict[str, subprocess.Popen] = {}
    try:
        for name, args in commands.items():
            procs[name] = start(args, env, work / f"{name}.log")
        yield System(url, env, procs, nats._proc.pid if nats._proc else 0)
    finally:
        for proc in reversed(procs.values()):
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        nats.stop()
