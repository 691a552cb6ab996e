"""A three-node NATS cluster on loopback, run from the deployment's own node configuration.

Each node is ``deploy/nats/kernelrank-nats.conf`` with its environment (name, ports, store folder, routes), as
docs/deploy.md runs it on three hosts, and includes the ``accounts.conf`` that ``kernelrank cluster-users`` writes.
Which node leads a stream is read from the monitoring endpoint (``/jsz``), which needs no credentials; a node is
caught up when its ``/healthz`` answers 200 (the server checks its streams and consumers are current).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from core.launch.cluster import ACCOUNT
from core.launch.natsserver import find_executable

REPO = Path(__file__).resolve().parents[2]
NODE_CONFIG = REPO / "deploy" / "nats" / "kernelrank-nats.conf"
ROUTE_PASSWORD = "route-secret-for-tests"


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports (each socket held until all are picked, so none is picked twice)."""
    with ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


@dataclass
class Node:
    name: str
    client: int
    cluster: int
    monitor: int
    store: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client}"

    @property
    def monitor_url(self) -> str:
        return f"http://127.0.0.1:{self.monitor}"


class NatsCluster:
    """Three nodes: ``start()`` them, ``kill(name)`` one (SIGKILL), ``restart(name)`` it on its ports and store."""

    def __init__(self, root: Path, accounts: Path, size: int = 3) -> None:
        self.root = root
        (root / "conf").mkdir(parents=True, exist_ok=True)
        shutil.copy(NODE_CONFIG, root / "conf" / NODE_CONFIG.name)
        shutil.copy(accounts, root / "conf" / "accounts.conf")
        ports = free_ports(3 * size)
        self.nodes = {
            f"nats-{i + 1}": Node(f"nats-{i + 1}", *ports[3 * i : 3 * i + 3], root / f"store-{i + 1}")
            for i in range(size)
        }

    @property
    def urls(self) -> str:
        """``KERNELRANK_NATS_URL`` for this cluster: every node, comma-separated."""
        return ",".join(node.url for node in self.nodes.values())

    def start(self, timeout_s: float = 60) -> NatsCluster:
        for name in self.nodes:
            self._spawn(name)
        for name in self.nodes:
            self.wait_healthy(name, timeout_s)
        return self

    def kill(self, name: str) -> None:
        proc = self.nodes[name].proc
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()

    def restart(self, name: str) -> None:
        self._spawn(name)

    def stop(self) -> None:
        for node in self.nodes.values():
            if node.proc and node.proc.poll() is None:
                node.proc.terminate()
                try:
                    node.proc.wait(15)
                except subprocess.TimeoutExpired:
                    node.proc.kill()
                    node.proc.wait()

    def leader(self, stream: str, timeout_s: float = 60) -> str:
        """The node leading ``stream`` now, as a live node reports it (waiting through an election)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for node in self.live():
                found = _stream_detail(node, stream)
                leader = (found or {}).get("cluster", {}).get("leader")
                if leader and self.nodes[leader].proc and self.nodes[leader].proc.poll() is None:
                    return leader
            time.sleep(0.1)
        raise AssertionError(f"no live node leads {stream} after {timeout_s} s; see {self.root}/*.log")

    def last_seq(self, name: str, stream: str) -> int:
        found = _stream_detail(self.nodes[name], stream) or {}
        return int(found.get("state", {}).get("last_seq", 0))

    def consumer_copies(self, stream: str, consumer: str) -> int:
        """How many live nodes hold a replicated copy of ``consumer`` on ``stream`` (one in a raft group)."""
        copies = 0
        for node in self.live():
            details = (_stream_detail(node, stream, consumers=True) or {}).get("consumer_detail") or []
            copies += any(c.get("name") == consumer and (c.get("cluster") or {}).get("raft_group") for c in details)
        return copies

    def live(self) -> list[Node]:
        return [node for node in self.nodes.values() if node.proc and node.proc.poll() is None]

    def wait_healthy(self, name: str, timeout_s: float) -> None:
        """Until the node answers ``/healthz`` with 200: up, in the cluster, its streams current."""
        node = self.nodes[name]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if node.proc is None or node.proc.poll() is not None:
                raise AssertionError(f"{name} exited: {self._log(name)[-2000:]}")
            if _get(node.monitor_url + "/healthz") is not None:
                return
            time.sleep(0.1)
        raise AssertionError(f"{name} was not healthy within {timeout_s} s: {self._log(name)[-2000:]}")

    def _spawn(self, name: str) -> None:
        node = self.nodes[name]
        routes = [f"nats-route://route:{ROUTE_PASSWORD}@127.0.0.1:{n.cluster}" for n in self.nodes.values()]
        env = {
            **os.environ,
            "NATS_SERVER_NAME": name,
            "NATS_LISTEN": f"127.0.0.1:{node.client}",
            "NATS_MONITOR": f"127.0.0.1:{node.monitor}",
            "NATS_STORE_DIR": str(node.store),
            "NATS_CLUSTER_LISTEN": f"127.0.0.1:{node.cluster}",
            "NATS_ROUTE_PASSWORD": ROUTE_PASSWORD,
            **{f"NATS_ROUTE_{i + 1}": route for i, route in enumerate(routes)},
        }
        with (self.root / f"{name}.log").open("a") as log:
            node.proc = subprocess.Popen(
                [str(find_executable()), "--config", str(self.root / "conf" / NODE_CONFIG.name)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def _log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _stream_detail(node: Node, stream: str, *, consumers: bool = False) -> dict | None:
    answer = _get(f"{node.monitor_url}/jsz?acc={ACCOUNT}&streams=true&consumers={str(consumers).lower()}")
    for account in (answer or {}).get("account_details", []):
        for detail in account.get("stream_detail", []):
            if detail.get("name") == stream:
                return detail
    return None


def _get(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return json.load(response) if response.status == 200 else None
    except (urllib.error.URLError, OSError, ValueError):
        return None
