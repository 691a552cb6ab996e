"""A worker process for the fault tests: a fake runner that takes a while and writes down what it evaluated.

Usage: ``python fault_worker.py NATS_URL EVALUATIONS_FILE DELAY_S CONCURRENCY``. Serves the CPU pool; each
finished evaluation appends its run id to EVALUATIONS_FILE (one line, flushed), so a test can count
evaluations across processes that it SIGKILLs. SIGTERM stops it cleanly. It logs in with the worker's credentials
its environment gives it (``KERNELRANK_NATS_CREDENTIALS``), anonymously without any.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from core.contracts.bus import Bus
from core.contracts.config import load_settings
from core.contracts.credentials import for_role
from core.contracts.roles import Role
from harness.job import EvalJob
from harness.result import EvalResult
from runners.base import ProgressCallback
from runners.fake import FakeRunner
from runners.worker import Worker


class LoggingRunner(FakeRunner):
    def __init__(self, log: Path, delay_s: float) -> None:
        super().__init__(delay_s=delay_s)
        self._log = log.open("a")

    async def run(self, job: EvalJob, on_progress: ProgressCallback | None = None) -> EvalResult:
        result = await super().run(job, on_progress)
        self._log.write(job.run_id + "\n")
        self._log.flush()
        return result


async def main(url: str, log: Path, delay_s: float, concurrency: int) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    bus = await Bus.connect(url, "fault-worker", for_role(load_settings(dotenv=None), Role.WORKER))
    try:
        await Worker(bus, "CPU", LoggingRunner(log, delay_s), concurrency=concurrency, poll_s=0.2, status_s=1.0).run(
            stop
        )
    finally:
        await bus.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])))
