"""``kernelrank up`` as a person runs it: an authenticated bus, each child as its role, and the quick start works."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.contracts.bus import Bus, BusUnavailable, Role
from core.contracts.credentials import read

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "harness"


def lines_of(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stdout or ():
            found.put(line)

    threading.Thread(target=read, daemon=True).start()
    return found


def wait_for_line(lines: queue.Queue[str], text: str, timeout_s: float, seen: list[str]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=0.5))
        except queue.Empty:
            continue
        if text in seen[-1]:
            return
    pytest.fail(f"never printed {text!r}; it printed:\n{''.join(seen)}")


def children_of(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found + [grandchild for child in found for grandchild in children_of(child)]


@pytest.mark.slow
def test_up_runs_every_process_as_its_role_and_submit_still_works(tmp_path: Path) -> None:
    home, problems = tmp_path / "var", tmp_path / "problems"
    shutil.copytree(FIXTURES / "vectoradd", problems / "vectoradd")
    env = {
        **os.environ,
        "KERNELRANK_HOME": str(home),
        "KERNELRANK_PROBLEMS_DIR": str(problems),
        "KERNELRANK_API_PORT": "0",  # any free port (api.url names it): never one a parallel test or `make up` holds
        "PYTHONPATH": str(REPO),
        "KERNELRANK_LOG_LEVEL": "INFO",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),  # `up` notes its home there: not in this machine's user's
    }
    env.pop("KERNELRANK_NATS_URL", None)
    up = subprocess.Popen(
        [sys.executable, "-m", "core.launch.main", "up", "--backend", "fake"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[str] = []
    try:
        wait_for_line(lines_of(up), "kernelrank is up", 60, seen)
        secrets = home / "secrets"
        assert all(stat.S_IMODE(d.stat().st_mode) == 0o700 for d in (secrets, secrets / "workers"))
        assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in secrets.rglob("*") if f.is_file())
        roles = [json.loads((secrets / f"{role}.json").read_text()) for role in ("core", "api", "discord", "slack")]
        (local,) = [json.loads(f.read_text()) for f in (secrets / "workers").glob("*.json")]  # one CPU worker
        assert local["user"] == "local-CPU-0" and local["pools"] == ["CPU"]
        passwords = [credential["password"] for credential in roles] + [local["password"], local["key"]]

        def submit() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "core.launch.main",
                    "submit",
                    str(FIXTURES / "submissions" / "correct.py"),
                    "--leaderboard",
                    "vectoradd",
                ],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )

        deadline = time.monotonic() + 60
        while (done := submit()).returncode != 0 and time.monotonic() < deadline:
            time.sleep(1)  # the core may still be loading the leaderboards
        assert done.returncode == 0, done.stdout + done.stderr
        assert "passed" in done.stdout.lower()

        processes = [up.pid, *children_of(up.pid)]
        assert len(processes) >= 4  # nats-server, core, a worker (and its helpers)
        for pid in processes:
            exposed = Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/environ").read_bytes()
            assert not any(password.encode() in exposed for password in passwords), pid
        log = "".join(seen) + (home / "run" / "nats.log").read_text()
        assert not any(password in log for password in passwords)

        url = (home / "run" / "nats.url").read_text().strip()
        with pytest.raises(BusUnavailable, match="refused"):
            asyncio.run(Bus.connect(url, "anonymous"))
        asyncio.run(a_remote_worker_is_issued_and_revoked_while_up_runs(url, secrets, env, tmp_path))
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(30)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
    assert up.returncode == 0, "".join(seen)


def workers_command(*args: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "core.launch.main", "workers", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def a_remote_worker_is_issued_and_revoked_while_up_runs(
    url: str, secrets: Path, env: dict[str, str], cwd: Path
) -> None:
    """``kernelrank workers add`` lets a new worker in at once, ``revoke`` drops its connection at once."""
    printed = workers_command("add", "remote-1", "--pool", "CPU", env=env, cwd=cwd)
    assert "The running nats-server has the change now" in printed
    credential = json.loads((secrets / "workers" / "remote-1.json").read_text())
    assert credential["password"] not in printed and credential["key"] not in printed
    worker = await Bus.connect(url, "remote", read(secrets / "workers" / "remote-1.json", Role.WORKER))
    try:
        await worker.jobs("CPU")
        assert "remote-1" in workers_command("list", env=env, cwd=cwd)
        assert "The running nats-server has the change now" in workers_command("revoke", "remote-1", env=env, cwd=cwd)
        for _ in range(100):
            if not worker._nc.is_connected:
                break
            await asyncio.sleep(0.05)
        assert not worker._nc.is_connected
    finally:
        await worker.close()
