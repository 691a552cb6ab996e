"""What a worker needs from a backend: run one job to its result, forwarding progress, and close.

Backends (``runners.backends.build_runner`` picks one): ``runners.local.LocalRunner`` (this host's GPU or
CPU, through the harness server), ``runners.modal_backend.ModalRunner`` (deployed Modal functions),
``runners.github_backend.GitHubRunner`` (workflow runs on self-hosted GPU runners) and
``runners.fake.FakeRunner`` (canned results for tests). A backend returns an ``EvalResult`` for everything
the submission does; it raises only when it cannot run anything at all. ``price_per_s`` prices the
result's ``gpu_s`` (None where runs are not billed); ``backlog`` counts jobs waiting inside the backend.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from core.contracts.config import ConfigError
from harness.job import EvalJob
from harness.result import EvalResult, Progress

ProgressCallback = Callable[[Progress], Awaitable[None]]


class RunnerUnavailable(Exception):
    """The backend cannot run anything right now (no GPU free, cloud credentials missing): retry later."""


class BackendError(ConfigError):
    """A backend cannot be built with these settings; the message says what to install or set."""


class Runner(Protocol):
    name: str
    price_per_s: float | None

    async def run(self, job: EvalJob, on_progress: ProgressCallback | None = None) -> EvalResult: ...

    async def backlog(self) -> int: ...

    async def close(self) -> None: ...
