"""``kernelrank up``: the whole system on one machine, on embedded defaults.

Starts a nats-server (unless ``KERNELRANK_NATS_URL`` names one), then the core and one local worker per
GPU (or one CPU worker) as child processes, restarts a child that dies, and on Ctrl-C stops the children
first (the core checkpoints the database) and NATS last.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from core.config import ConfigError, Settings
from core.gpus import local_pools
from core.natsserver import EmbeddedNats

log = logging.getLogger("kernelrank.up")
RESTART_DELAY_S = 2.0
STOP_TIMEOUT_S = 15.0


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    proc: subprocess.Popen | None = None
    restarts: list[float] = field(default_factory=list)

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, env=self.env)
        log.info("started %s (pid %d)", self.name, self.proc.pid)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def wait_stopped(self, deadline: float) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop in time; killing it", self.name)
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(prog="kernelrank up", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="local", choices=("local", "fake"),
                        help="worker backend (fake answers instantly: for demos and load tests)")
    args = parser.parse_args(argv)
    settings.home.mkdir(parents=True, exist_ok=True)
    nats = None if settings.nats_url else EmbeddedNats()
    url = settings.nats_url or nats.start(settings.home / "run", settings.nats_store)
    settings.nats_url_file.parent.mkdir(parents=True, exist_ok=True)
    settings.nats_url_file.write_text(url)
    env = {**os.environ, "KERNELRANK_NATS_URL": url, "KERNELRANK_HOME": str(settings.home)}
    exe = [sys.executable, "-m", "core.main"]
    children = [Child("core", [*exe, "core"], env)]
    for pool, count in local_pools().items():
        for index in range(count):
            gpu_env = env if pool == "CPU" else {**env, "CUDA_VISIBLE_DEVICES": str(index)}
            children.append(Child(f"worker {pool}#{index}",
                                  [*exe, "worker", "--gpu", pool, "--backend", args.backend], gpu_env))
    children += _chat_adapters(settings, exe, env)
    stopping = False

    def request_stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        for child in children:
            child.start()
        print(f"kernelrank is up: NATS {url}, database {settings.database}, "
              f"workers {', '.join(c.name.removeprefix('worker ') for c in children if c.name.startswith('worker'))}"
              f"{''.join(f', {c.name} adapter' for c in children if c.name in ('discord', 'slack'))}.\n"
              "In another terminal: `kernelrank list`, then `kernelrank submit FILE --leaderboard NAME`. "
              "Ctrl-C stops everything.", flush=True)
        while not stopping:
            time.sleep(0.5)
            for child in children:
                if child.proc and child.proc.poll() is not None and not stopping:
                    _restart(child)
    finally:
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for child in reversed(children):  # workers first, the core (which checkpoints) last
            child.stop()
        for child in reversed(children):
            child.wait_stopped(deadline)
        settings.nats_url_file.unlink(missing_ok=True)
        if nats:
            nats.stop()
        print("kernelrank stopped.", flush=True)
    return 0


def _chat_adapters(settings: Settings, exe: list[str], env: dict[str, str]) -> list[Child]:
    """The chat adapters whose credentials are set; one with unusable settings is reported and left out."""
    from adapters.slack.config import slack_config, slack_enabled

    adapters = [Child("discord", [*exe, "discord"], env)] if settings.discord_token else []
    if not slack_enabled(settings):
        return adapters
    try:
        slack_config(settings)
    except ConfigError as exc:
        print(f"Slack is not started: {exc}", flush=True)
        return adapters
    return [*adapters, Child("slack", [*exe, "slack"], env)]


def _restart(child: Child) -> None:
    now = time.monotonic()
    child.restarts = [t for t in child.restarts if now - t < 60] + [now]
    log.error("%s exited with code %s; restarting", child.name, child.proc.returncode if child.proc else "?")
    time.sleep(RESTART_DELAY_S * min(len(child.restarts), 5))
    child.start()
