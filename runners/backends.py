"""``--backend``: which runner a worker drives, built from the settings.

=======  ============================================================  ===================================
backend  where jobs run                                                needs
=======  ============================================================  ===================================
local    this host's GPU (or CPU), through the warm harness server     torch (the ``harness`` extra)
modal    the deployed Modal function for the pool's GPU type           the ``modal`` extra, a Modal token
github   a workflow run on a self-hosted GitHub Actions GPU runner     GITHUB_TOKEN, KERNELRANK_GITHUB_REPO
fake     nowhere: instant canned results (demos, load tests)           nothing
=======  ============================================================  ===================================

Remote backends keep their calls in the bus's ``runner_calls`` bucket, so a restarted worker re-attaches.
"""

from __future__ import annotations

import importlib.util

from core.contracts.bus import Bus
from core.contracts.config import Settings
from runners.base import BackendError, Runner

BACKENDS = ("local", "modal", "github", "fake")


async def build_runner(backend: str, gpu: str, settings: Settings, bus: Bus) -> Runner:
    if backend == "local":
        from runners.local import LocalRunner

        runner = LocalRunner()
        runner.warm_up()
        return runner
    if backend == "fake":
        from runners.fake import FakeRunner

        return FakeRunner()
    if backend == "modal":
        if importlib.util.find_spec("modal") is None:
            raise BackendError("the modal backend needs the Modal client: pip install 'kernelrank[modal]'")
        from runners.modal_backend import ModalRunner

        return ModalRunner(
            gpu,
            await bus.runner_calls(),
            app=settings.modal_app,
            price_per_s=settings.gpu_prices.get(gpu),
            deployed_timeout_s=settings.modal_timeout_s,
            queue_timeout_s=settings.remote_queue_timeout_s,
        )
    if backend == "github":
        from runners.github_backend import GitHubRunner, github_api

        return GitHubRunner(
            gpu, await bus.runner_calls(), github_api(settings), queue_timeout_s=settings.remote_queue_timeout_s
        )
    raise BackendError(f"unknown runner backend {backend!r}; use one of {', '.join(BACKENDS)}")
