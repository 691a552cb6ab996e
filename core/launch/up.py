"""``kernelrank up``: the whole system on one machine, on embedded defaults.

Starts a nats-server (unless ``KERNELRANK_NATS_URL`` names one), then the core, the HTTP API and one local
worker per GPU (or one CPU worker) as child processes, restarts any of them that dies (nats-server too, on the
same port and store, so clients reconnect and JetStream keeps every job), backing off when one keeps dying, and
on Ctrl-C stops the children first (the core checkpoints the database) and NATS last.

The embedded nats-server asks for credentials: each role's are made once under ``<home>/secrets``
(``core.contracts.credentials``), each local worker is issued its own (``local-<pool>-<n>``, as
``kernelrank workers add`` issues a remote one), and each child is handed the path of its own file in its
environment (never on a command line, which ``ps`` shows), with the secrets of other roles blanked out.

The local user gets a fresh personal token at every start, kept owner-only in ``<home>/run/api.token`` next to
the API's URL (``api.url``), so ``kernelrank submit`` works on this machine with no sign-in step. The core gets
only the token's prefix and hash, learns the token belongs to the local user (an admin) on its first use, and
revokes the one an earlier start issued.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from core.contracts import issued_workers
from core.contracts.config import ConfigError, Settings, env_name, local_home_file
from core.contracts.credentials import embedded_server_config, result_secret
from core.contracts.gpus import local_pools
from core.contracts.localfiles import write_private
from core.contracts.roles import Role
from core.contracts.tokenformat import make_token, token_prefix, token_sha256
from core.launch.natsserver import EmbeddedNats, NatsServerError

log = logging.getLogger("kernelrank.up")
RESTART_DELAY_S = 2.0
STOP_TIMEOUT_S = 15.0
# Secrets only some roles use; every other child gets them blanked (an empty value also hides a .env file's).
ROLE_SECRETS = {
    Role.CORE: ("result_secret",),
    Role.WORKER: ("github_token",),
    Role.DISCORD: ("discord_token",),
    Role.SLACK: ("slack_bot_token", "slack_app_token", "slack_signing_secret"),
}
READY_TIMEOUT_S = 120.0  # the API answering and the core behind it, before `up` says it is up


@dataclass
class Restarts:
    """When a supervised process was restarted lately, and how long to wait before the next restart."""

    times: list[float] = field(default_factory=list)

    def delay_s(self) -> float:
        now = time.monotonic()
        self.times = [t for t in self.times if now - t < 60] + [now]
        return RESTART_DELAY_S * min(len(self.times), 5)


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    proc: subprocess.Popen | None = None
    restarts: Restarts = field(default_factory=Restarts)

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
    parser.add_argument(
        "--backend",
        default="local",
        choices=("local", "fake"),
        help="worker backend (fake answers instantly: for demos and load tests)",
    )
    args = parser.parse_args(argv)
    settings.home.mkdir(parents=True, exist_ok=True)
    pointer = local_home_file()  # the terminal client finds this kernelrank from any folder
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(str(settings.home.resolve()))
    nats = None if settings.nats_url else EmbeddedNats()
    embedded = nats is not None
    try:
        workers = _local_workers(settings, embedded=embedded)
    except ConfigError as exc:
        print(f"kernelrank up: {exc}", file=sys.stderr)
        return 2
    url = (
        nats.start(settings.home / "run", settings.nats_store, embedded_server_config(settings.secrets_dir))
        if nats
        else settings.nats_url
    )
    settings.nats_url_file.parent.mkdir(parents=True, exist_ok=True)
    settings.nats_url_file.write_text(url)
    env = {**os.environ, "KERNELRANK_NATS_URL": url, "KERNELRANK_HOME": str(settings.home)}
    exe = [sys.executable, "-m", "core.launch.main"]
    settings.api_url_file.unlink(missing_ok=True)  # an earlier run's; the API writes its own once it listens
    children = [
        Child(
            "core",
            [*exe, "core"],
            {
                **role_env(env, settings, Role.CORE, embedded=embedded),
                "KERNELRANK_LOCAL_TOKEN_ID": _local_token(settings),
            },
        ),
        Child("api", [*exe, "api"], role_env(env, settings, Role.API, embedded=embedded)),
    ]
    worker_env = role_env(env, settings, Role.WORKER, embedded=False)
    for (pool, index), credential in workers.items():
        gpu_env = worker_env if pool == "CPU" else {**worker_env, "CUDA_VISIBLE_DEVICES": str(index)}
        if credential is not None:
            gpu_env = {**gpu_env, **_credentials_env(credential)}
        children.append(
            Child(f"worker {pool}#{index}", [*exe, "worker", "--gpu", pool, "--backend", args.backend], gpu_env)
        )
    children += _chat_adapters(settings, exe, env, embedded=embedded)
    stopping = False
    nats_restarts = Restarts()

    def request_stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        for child in children:
            child.start()
        ready_by, announced = time.monotonic() + READY_TIMEOUT_S, False
        while not stopping:
            time.sleep(0.5)
            if nats and nats.exited() is not None and not stopping:
                _restart_nats(nats, nats_restarts)
            for child in children:
                if child.proc and child.proc.poll() is not None and not stopping:
                    _restart(child)
            if not announced:
                api = _ready_api(settings)
                if api or time.monotonic() > ready_by:
                    announced = True
                    _announce(api, url, settings, children)
    finally:
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for child in reversed(children):  # workers first, the core (which checkpoints) last
            child.stop()
        for child in reversed(children):
            child.wait_stopped(deadline)
        settings.nats_url_file.unlink(missing_ok=True)
        settings.local_token_file.unlink(missing_ok=True)
        if pointer.is_file() and pointer.read_text() == str(settings.home.resolve()):
            pointer.unlink()
        if nats:
            nats.stop()
        print("kernelrank stopped.", flush=True)
    return 0


def role_env(env: dict[str, str], settings: Settings, role: Role, *, embedded: bool) -> dict[str, str]:
    """A child's environment: on the embedded server, the path of its role's credentials; everywhere, no
    secret that only another role uses."""
    child = dict(env)
    for other, names in ROLE_SECRETS.items():
        if other is not role:
            child.update({env_name(name): "" for name in names})
    if embedded:
        child.update(_credentials_env(settings.secrets_dir / f"{role.value}.json"))
    return child


def _credentials_env(path: Path) -> dict[str, str]:
    """Log in with the file at ``path`` alone (a worker's carries its key: no key file of another worker)."""
    blanked = ("nats_user", "nats_password", "worker_key_file")
    return {"KERNELRANK_NATS_CREDENTIALS": str(path), **{env_name(name): "" for name in blanked}}


def _local_workers(settings: Settings, *, embedded: bool) -> dict[tuple[str, int], Path | None]:
    """(pool, GPU index) of each local worker -> its credential file, issued here on the embedded server (kept
    across starts); None on a NATS of one's own, where the workers log in as ``KERNELRANK_NATS_CREDENTIALS`` says."""
    workers: dict[tuple[str, int], Path | None] = {}
    for pool, count in local_pools().items():
        for index in range(count):
            name = f"local-{re.sub(r'[^A-Za-z0-9-]', '-', pool)}-{index}"
            workers[(pool, index)] = (
                issued_workers.issue(settings.secrets_dir, name, [pool], result_secret(settings), keep=True)
                if embedded
                else None
            )
    return workers


def _local_token(settings: Settings) -> str:
    """Issue the local user a fresh token (owner-only file); return what the core learns of it: prefix and hash."""
    token = make_token()
    write_private(settings.local_token_file, token + "\n")
    return f"{token_prefix(token)}:{token_sha256(token)}"


def _ready_api(settings: Settings) -> str:
    """The API's URL once it answers and the core behind it does, else ""."""
    url = settings.api_url_file.read_text().strip() if settings.api_url_file.is_file() else ""
    return url if url and _healthy(url) else ""


def _announce(api: str, nats_url: str, settings: Settings, children: list[Child]) -> None:
    if not api:
        log.warning("the API or the core did not answer within %.0f s; see the log above", READY_TIMEOUT_S)
    workers = ", ".join(c.name.removeprefix("worker ") for c in children if c.name.startswith("worker"))
    adapters = "".join(f", {c.name} adapter" for c in children if c.name in ("discord", "slack"))
    print(
        f"kernelrank is up: API {api or '(not answering yet)'}, NATS {nats_url}, database "
        f"{settings.database}, workers {workers}{adapters}.\n"
        "In another terminal: `kernelrank list`, then `kernelrank submit FILE --leaderboard NAME`. "
        "Ctrl-C stops everything.",
        flush=True,
    )


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/health", timeout=5) as response:
            return json.load(response).get("core") == "ok"
    except (OSError, ValueError, urllib.error.URLError):
        return False


def _chat_adapters(settings: Settings, exe: list[str], env: dict[str, str], *, embedded: bool = False) -> list[Child]:
    """The chat adapters whose credentials are set; one with unusable settings is reported and left out."""
    from adapters.slack.config import slack_config, slack_enabled

    adapters = (
        [Child("discord", [*exe, "discord"], role_env(env, settings, Role.DISCORD, embedded=embedded))]
        if settings.discord_token
        else []
    )
    if not slack_enabled(settings):
        return adapters
    try:
        slack_config(settings)
    except ConfigError as exc:
        print(f"Slack is not started: {exc}", flush=True)
        return adapters
    return [*adapters, Child("slack", [*exe, "slack"], role_env(env, settings, Role.SLACK, embedded=embedded))]


def _restart(child: Child) -> None:
    log.error("%s exited with code %s; restarting", child.name, child.proc.returncode if child.proc else "?")
    time.sleep(child.restarts.delay_s())
    child.start()


def _restart_nats(nats: EmbeddedNats, restarts: Restarts) -> None:
    """Bring the message bus back where it was; the children reconnect by themselves (a try that fails waits for
    the next round of the supervision loop)."""
    log.error("nats-server exited with code %s; restarting it on the same port and store", nats.exited())
    time.sleep(restarts.delay_s())
    try:
        nats.restart()
    except NatsServerError as exc:
        log.error("nats-server did not come back: %s", exc)
