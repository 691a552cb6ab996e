"""Fixtures of the shipped-problems suite: the device to evaluate on (solutions run on the session's warm
``harness_server``, tests/conftest.py).

Solutions run through the real harness (server, fork, sandbox, worker): on CUDA where this machine has
it, else on the CPU, where CUDA-only fixtures are skipped with the reason their header gives.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="session")
def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"
