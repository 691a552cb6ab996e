"""The one fixture the harness's CUDA tests need, for GPU machines that lack the suite's own dependencies (NATS,
DuckDB): ``python3 -m pytest --noconftest -p bench.gpu_pytest_plugin -m cuda tests/harness/...``."""

from collections.abc import Iterator

import pytest

from harness import HarnessServer


@pytest.fixture(scope="session")
def harness_server() -> Iterator[HarnessServer]:
    with HarnessServer() as server:
        yield server
