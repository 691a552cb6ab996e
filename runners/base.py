"""What a worker needs from a backend: run one job to its result, forwarding progress, and close.

Backends: ``runners.local.LocalRunner`` (this host's GPU or CPU, through the harness server),
``runners.fake.FakeRunner`` (canned results for tests), and later a Modal backend. A backend returns an
``EvalResult`` for everything the submission does; it raises only when it cannot run anything at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from harness.job import EvalJob
from harness.result import EvalResult, Progress

ProgressCallback = Callable[[Progress], Awaitable[None]]


class Runner(Protocol):
    name: str

    async def run(self, job: EvalJob, on_progress: ProgressCallback | None = None) -> EvalResult: ...

    async def close(self) -> None: ...
