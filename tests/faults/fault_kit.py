"""Processes to kill and the bookkeeping to check what survived: the fault suite's shared parts.

- ``NatsProcess``: a nats-server on a fixed port and store, so it can be SIGKILLed and started again where
  every client reconnects to it (the embedded server picks a new port at each start).
- ``ServiceProcess``: ``kernelrank core`` / ``kernelrank worker`` / an adapter as a child process, with its log.
- ``CountingRunner``: a fake runner that counts evaluations per run id (``fault_worker.py`` does the same
  in a process of its own, into a file).
- ``submit_all``, ``final_replies``, ``stored_runs``: send a burst, read what came back, read the database.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import duckdb

from core.contracts.bus import Bus, BusError
from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, CommandKind, Platform, Reply, ReplyTo, Tone
from core.launch.natsserver import find_executable
from harness.job import EvalJob
from harness.result import EvalResult
from runners.base import ProgressCallback
from runners.fake import FakeRunner

REPO = Path(__file__).resolve().parents[2]
KERNEL = (REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py").read_bytes()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class NatsProcess:
    """One nats-server that can be killed and started again on the same port and JetStream store."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # the first start lets the server pick both ports and later starts reuse them: a port picked here and
        # then freed could be handed to the server's own random monitor port (a CI run lost a start to that)
        self.url = self.monitor = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        run = self.root / "run"
        run.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                str(find_executable()),
                "-a",
                "127.0.0.1",
                "-p",
                self.url.rpartition(":")[2] or "-1",
                "-m",
                self.monitor.rpartition(":")[2] or "-1",
                "--ports_file_dir",
                str(run),
                "-js",
                "-sd",
                str(self.root / "store"),
                "-l",
                str(self.root / "nats.log"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        ports_file = run / f"nats-server_{self.proc.pid}.ports"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited: {(self.root / 'nats.log').read_text()[-2000:]}")
            try:
                ports = json.loads(ports_file.read_text())
                monitor = ports["monitoring"][0]
                with urllib.request.urlopen(monitor + "/healthz?js-enabled-only=true", timeout=1) as answer:
                    if answer.status == 200:
                        self.url, self.monitor = ports["nats"][0], monitor
                        return self.url
            except (OSError, ValueError, KeyError, IndexError):
                pass
            time.sleep(0.02)
        raise RuntimeError("nats-server did not become healthy")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class ServiceProcess:
    """``python -m core.launch.main ARGS`` (or any argv) as a child, its output in ``log``; kill or stop it."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.argv, self.env, self.log = argv, env, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ServiceProcess:
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        return self

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout_s: float = 60) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()


def service_env(url: str, home: Path, problems: Path, **settings: str) -> dict[str, str]:
    """The environment of a kernelrank process in these tests: one CPU pool, no rate limit, short waits."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "KERNELRANK_NATS_URL": url,
        "KERNELRANK_HOME": str(home),
        "KERNELRANK_PROBLEMS_DIR": str(problems),
        "KERNELRANK_GPUS": "CPU",
        "KERNELRANK_RATE_LIMIT_PER_MINUTE": "100000",
        "KERNELRANK_ACK_WAIT_S": "4",
        **{f"KERNELRANK_{key.upper()}": value for key, value in settings.items()},
    }


def core_process(env: dict[str, str], log: Path) -> ServiceProcess:
    return ServiceProcess([sys.executable, "-m", "core.launch.main", "core"], env, log)


def worker_process(
    env: dict[str, str], log: Path, evaluations: Path, *, delay_s: float, concurrency: int
) -> ServiceProcess:
    """A worker process whose runner takes ``delay_s`` per job and appends each run id it evaluates to a file."""
    script = Path(__file__).with_name("fault_worker.py")
    return ServiceProcess(
        [sys.executable, str(script), env["KERNELRANK_NATS_URL"], str(evaluations), str(delay_s), str(concurrency)],
        env,
        log,
    )


class CountingRunner(FakeRunner):
    """A ``FakeRunner`` that remembers how many times each run was evaluated."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        self.evaluations: collections.Counter[str] = collections.Counter()

    async def run(self, job: EvalJob, on_progress: ProgressCallback | None = None) -> EvalResult:
        self.evaluations[job.run_id] += 1
        return await super().run(job, on_progress)


def evaluations_in(path: Path) -> collections.Counter[str]:
    """Run ids ``fault_worker.py`` processes wrote, one line per evaluation that finished."""
    return collections.Counter(path.read_text().split()) if path.exists() else collections.Counter()


@dataclass
class Outcome:
    """What one sender was told: the reply (accepted or refused), or the error its client raised."""

    command_id: str
    reply: Reply | None = None
    error: str = ""

    @property
    def accepted(self) -> bool:
        return self.reply is not None and self.reply.tone is not Tone.ERROR and bool(self.reply.data.get("runs"))

    @property
    def run_ids(self) -> set[str]:
        return {run["run_id"] for run in self.reply.data["runs"]} if self.accepted else set()


def actor(user: str) -> Actor:
    return Actor(platform=Platform.DISCORD, user_id=user, display_name=user.title())


async def submit_all(
    bus: Bus,
    count: int,
    route: str,
    *,
    in_flight: int = 64,
    timeout_s: float = 30.0,
    started: asyncio.Event | None = None,
    marks: tuple[tuple[int, asyncio.Event], ...] = (),
) -> list[Outcome]:
    """``count`` submissions (distinct sources, ten people), ``in_flight`` at a time; what each sender got.

    ``started`` is set once a third are answered; each event of ``marks`` once its number are."""
    slots = asyncio.Semaphore(in_flight)
    answered = 0

    async def one(index: int) -> Outcome:
        nonlocal answered
        cmd = submit_command(
            actor(f"user{index % 10}"),
            ReplyTo(Platform.DISCORD, route),
            "k.py",
            KERNEL + f"# variant {index}\n".encode(),
            leaderboard="vectoradd",
            mode="test",
        )
        async with slots:
            try:
                outcome = Outcome(cmd.id, reply=await bus.request(cmd, timeout_s=timeout_s))
            except BusError as exc:
                outcome = Outcome(cmd.id, error=str(exc))
        answered += 1
        if started is not None and answered >= count // 3:
            started.set()
        for at, event in marks:
            if answered >= at:
                event.set()
        return outcome

    return await asyncio.gather(*(one(i) for i in range(count)))


async def wait_for_core(bus: Bus, timeout_s: float = 60.0) -> None:
    ask = query_command(actor("probe"), ReplyTo(Platform.DISCORD, "probe"), CommandKind.LIST)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await bus.request(ask, timeout_s=2)
            return
        except BusError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def final_replies(
    bus: Bus, route: str, run_ids: set[str], *, timeout_s: float = 120.0, quiet_s: float = 3.0
) -> collections.Counter[str]:
    """How many final replies each run got on ``route``: read until all arrived and ``quiet_s`` passed silently."""
    counts: collections.Counter[str] = collections.Counter()
    deadline = time.monotonic() + timeout_s
    stream = bus.follow_replies(route, Platform.DISCORD)
    try:
        while time.monotonic() < deadline:
            wait = quiet_s if run_ids <= counts.keys() else max(0.1, deadline - time.monotonic())
            try:
                reply = await asyncio.wait_for(anext(stream), wait)
            except TimeoutError:
                if run_ids <= counts.keys():
                    break
                continue
            if reply.final and reply.in_reply_to in run_ids:
                counts[reply.in_reply_to] += 1
    finally:
        await stream.aclose()
    return counts


@dataclass(frozen=True)
class StoredRun:
    state: str
    status: str | None
    command_id: str
    worker: str | None


def stored_runs(database: Path) -> dict[str, StoredRun]:
    """Every run in the database file, by run id (read with the core stopped: it holds the file's lock)."""
    with duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute(
            "SELECT r.run_id, r.state, r.status, s.command_id, r.worker FROM runs r "
            "JOIN submissions s ON s.id = r.submission_id"
        ).fetchall()
    return {run_id: StoredRun(*rest) for run_id, *rest in rows}


def stored_commands(database: Path) -> collections.Counter[str]:
    with duckdb.connect(str(database), read_only=True) as con:
        return collections.Counter(c for (c,) in con.execute("SELECT command_id FROM submissions").fetchall())


__all__ = [
    "CountingRunner",
    "KERNEL",
    "NatsProcess",
    "Outcome",
    "ServiceProcess",
    "StoredRun",
    "core_process",
    "evaluations_in",
    "final_replies",
    "free_port",
    "service_env",
    "stored_commands",
    "stored_runs",
    "submit_all",
    "wait_for_core",
    "worker_process",
]
