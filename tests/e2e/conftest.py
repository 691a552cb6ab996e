"""A whole kernelrank on one event loop: real NATS, real DuckDB file, the core service and a CPU worker.

``system`` starts the core in-process (so tests can look at its store) with a worker whose runner the
test chooses: the real ``LocalRunner`` (the harness on CPU) or a ``FakeRunner`` with canned results.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.bus import Bus
from core.commands import query_command, submit_command
from core.config import Settings
from core.db import Database
from core.messages import Actor, CommandKind, Platform, Reply, ReplyTo
from core.service import CoreService
from runners.worker import Worker
from storage.store import Store

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"


@dataclass
class System:
    bus: Bus
    store: Store
    service: CoreService
    settings: Settings
    route: str = "e2e"
    tasks: list[asyncio.Task] = field(default_factory=list)

    def actor(self, user: str) -> Actor:
        """A person as a chat adapter vouches for them (a terminal actor without a token is refused)."""
        return Actor(platform=Platform.DISCORD, user_id=user, display_name=user.title())

    async def submit(self, user: str, source: str, file_name: str = "k.py", **kwargs) -> Reply:
        cmd = submit_command(self.actor(user), ReplyTo(Platform.CLI, self.route), file_name, source.encode(),
                             **kwargs)
        return await self.bus.request(cmd, timeout_s=10)

    async def ask(self, user: str, kind: CommandKind, **args) -> Reply:
        return await self.bus.request(query_command(self.actor(user), ReplyTo(Platform.CLI, self.route), kind,
                                                    **args), timeout_s=10)

    async def finals(self, run_ids: set[str], timeout_s: float = 60) -> dict[str, Reply]:
        """The final reply of each run, read from this route's reply stream."""
        found: dict[str, Reply] = {}

        async def collect() -> None:
            async for reply in self.bus.follow_replies(self.route):
                if reply.final and reply.in_reply_to in run_ids:
                    found[reply.in_reply_to] = reply
                    if len(found) == len(run_ids):
                        return

        await asyncio.wait_for(collect(), timeout_s)
        return found


@pytest.fixture
def problems(tmp_path: Path) -> Path:
    """A problems folder holding the harness's small vectoradd fixture problem."""
    target = tmp_path / "problems"
    shutil.copytree(FIXTURES / "vectoradd", target / "vectoradd")
    return target


@pytest.fixture
async def make_system(nats_url: str, tmp_path: Path, problems: Path) -> AsyncIterator[Callable]:
    started: list[tuple[System, asyncio.Event, Database]] = []

    async def start(runner, *, rate_limit: int = 1000, max_source_bytes: int = 256 * 1024,
                    announce: list[str] | None = None, pools: list[str] | None = None, **more: Any) -> System:
        """``more``: other ``Settings`` fields, e.g. ``admins=["discord:root"]``."""
        settings = Settings(home=tmp_path / "var", problems_dir=problems, nats_url=nats_url,
                            rate_limit_per_minute=rate_limit, max_source_bytes=max_source_bytes, ack_wait_s=5,
                            announce=announce or [], **more)
        bus = await Bus.connect(nats_url, name="e2e")
        store = Store(settings.database)
        db = Database(store)
        service = CoreService(bus, db, settings, pools or ["CPU"])
        await service.start()
        system = System(bus, store, service, settings)
        stop = asyncio.Event()
        worker = Worker(bus, "CPU", runner, concurrency=2, poll_s=0.2, status_s=0.5)
        system.tasks.append(asyncio.create_task(worker.run(stop)))
        started.append((system, stop, db))
        return system

    yield start
    for system, stop, db in started:
        stop.set()
        await asyncio.gather(*system.tasks)
        await system.service.stop()
        await db.close()
        await system.bus.close()
