"""Fixtures of the shipped-problems suite: the device to evaluate on and one warm harness server.

Solutions run through the real harness (server, fork, sandbox, worker): on CUDA where this machine has
it, else on the CPU, where CUDA-only fixtures are skipped with the reason their header gives.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from harness import HarnessServer


@pytest.fixture(scope="session")
def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture(scope="session")
def problems_harness() -> Iterator[HarnessServer]:
    with HarnessServer() as server:
        yield server
