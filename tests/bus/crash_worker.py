"""A worker process that dies mid-job, the way a kernel that takes its machine down would.

Usage: ``python crash_worker.py NATS_URL GPU``. The worker picks up one job, publishes its "started"
progress, then its runner calls ``os._exit(3)``: no result, no ack, no goodbye.
"""

from __future__ import annotations

import asyncio
import os
import sys

from core.contracts.bus import Bus
from runners.worker import Worker

CRASH_EXIT_CODE = 3


class CrashingRunner:
    name = "crashing"

    async def run(self, job: object, on_progress: object = None) -> object:
        os._exit(CRASH_EXIT_CODE)

    async def close(self) -> None:
        """Never reached."""


async def main(url: str, gpu: str) -> None:
    bus = await Bus.connect(url, name="crash-worker")
    await Worker(bus, gpu, CrashingRunner(), poll_s=0.2).run(asyncio.Event())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
