"""A whole kernelrank on one event loop: real NATS, real DuckDB file, the core service and a CPU worker.

``system`` starts the core in-process (so tests can look at its store) with a worker whose runner the
test chooses: the real ``LocalRunner`` (the harness on CPU) or a ``FakeRunner`` with canned results.

``make_system`` shares one anonymous connection to an open NATS between the core, the worker and the
client; ``make_authed_system`` connects each as its role (core, worker, discord) to a NATS that asks for
credentials, as ``kernelrank up`` runs them. ``on_bus`` runs a test on both: it gives the way to make a
system, the NATS URL, and the environment that hands a child process the credentials of a role.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from worker_testkit import WORKER

from core.contracts import issued_workers
from core.contracts.bus import Bus, Role
from core.contracts.commands import query_command, submit_command
from core.contracts.config import Settings
from core.contracts.credentials import BusCredentials, read
from core.contracts.messages import Actor, CommandKind, Platform, Reply, ReplyTo
from core.service.bootstrap import bootstrap, utc_now
from core.service.db import Database
from core.service.loop import CoreService
from runners.worker import Worker
from storage.store import Store

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"


@dataclass
class System:
    bus: Bus  # the client's connection: a Discord adapter's (its role where the bus asks)
    store: Store
    service: CoreService
    settings: Settings
    route: str = "e2e"
    tasks: list[asyncio.Task] = field(default_factory=list)
    buses: list[Bus] = field(default_factory=list)  # every connection the system opened, the client's included
    reader: Bus | None = None  # reads the replies the core stored (the core's connection where the bus asks)

    def actor(self, user: str) -> Actor:
        """A person as a chat adapter vouches for them (a terminal actor without a token is refused)."""
        return Actor(platform=Platform.DISCORD, user_id=user, display_name=user.title())

    async def submit(self, user: str, source: str, file_name: str = "k.py", **kwargs) -> Reply:
        cmd = submit_command(
            self.actor(user), ReplyTo(Platform.DISCORD, self.route), file_name, source.encode(), **kwargs
        )
        return await self.bus.request(cmd, timeout_s=10)

    async def ask(self, user: str, kind: CommandKind, **args) -> Reply:
        return await self.bus.request(
            query_command(self.actor(user), ReplyTo(Platform.DISCORD, self.route), kind, **args), timeout_s=10
        )

    async def finals(self, run_ids: set[str], timeout_s: float = 60) -> dict[str, Reply]:
        """The final reply of each run, read from this route's reply stream."""
        return await self._first_of_each(run_ids, lambda reply: reply.final, timeout_s)

    async def details(self, run_ids: set[str], timeout_s: float = 60) -> dict[str, Reply]:
        """The private details of each run's result (``core.service.verdicts``), read from the reply stream."""
        return await self._first_of_each(run_ids, lambda reply: reply.data.get("kind") == "detail", timeout_s)

    async def _first_of_each(
        self, run_ids: set[str], wanted: Callable[[Reply], bool], timeout_s: float
    ) -> dict[str, Reply]:
        found: dict[str, Reply] = {}

        async def collect() -> None:
            async for reply in (self.reader or self.bus).follow_replies(self.route, Platform.DISCORD):
                if wanted(reply) and reply.in_reply_to in run_ids and reply.in_reply_to not in found:
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


ROLES = (Role.CORE, Role.WORKER, Role.DISCORD)
Connect = Callable[[], Awaitable[dict[Role, Bus]]]  # one system's connections, by role


@contextlib.asynccontextmanager
async def systems(connect: Connect, nats_url: str, tmp_path: Path, problems: Path) -> AsyncIterator[Callable]:
    started: list[tuple[System, asyncio.Event, Database]] = []

    async def start(
        runner,
        *,
        rate_limit: int = 1000,
        max_source_bytes: int = 256 * 1024,
        announce: list[str] | None = None,
        pools: list[str] | None = None,
        now: Callable[[], datetime] = utc_now,
        **more: Any,
    ) -> System:
        """``more``: other ``Settings`` fields, e.g. ``admins=["discord:root"]``; ``now``: the core's clock."""
        settings = Settings(
            home=tmp_path / "var",
            problems_dir=problems,
            nats_url=nats_url,
            rate_limit_per_minute=rate_limit,
            max_source_bytes=max_source_bytes,
            ack_wait_s=5,
            announce=announce or [],
            **more,
        )
        buses = await connect()
        store = Store(settings.database)
        db = Database(store)
        service = bootstrap(buses[Role.CORE], db, settings, pools or ["CPU"], now=now)
        await service.start()
        system = System(
            buses[Role.DISCORD],
            store,
            service,
            settings,
            buses=list(dict.fromkeys(buses.values())),
            reader=buses[Role.CORE],
        )
        stop = asyncio.Event()
        worker = Worker(buses[Role.WORKER], "CPU", runner, concurrency=2, poll_s=0.2, status_s=0.5)
        system.tasks.append(asyncio.create_task(worker.run(stop)))
        started.append((system, stop, db))
        return system

    try:
        yield start
    finally:
        for system, stop, db in started:
            stop.set()
            await asyncio.gather(*system.tasks)
            await system.service.stop()
            await db.close()
            for bus in system.buses:
                await bus.close()


@pytest.fixture
async def make_system(nats_url: str, tmp_path: Path, problems: Path) -> AsyncIterator[Callable]:
    async def connect() -> dict[Role, Bus]:
        bus = await Bus.connect(nats_url, name="e2e")
        return dict.fromkeys(ROLES, bus)

    async with systems(connect, nats_url, tmp_path, problems) as start:
        yield start


@pytest.fixture
async def make_authed_system(authed_nats, tmp_path: Path, problems: Path) -> AsyncIterator[Callable]:
    async def connect() -> dict[Role, Bus]:
        return {role: await authed_nats.connect(role) for role in ROLES}

    async with systems(connect, authed_nats.url, tmp_path, problems) as start:
        yield start


@dataclass
class OnBus:
    make_system: Callable
    nats_url: str
    secrets: Path | None = None  # where each role's credentials are; None on the open bus

    def credentials(self, role: Role) -> BusCredentials | None:
        return read(self._file(role), role) if self.secrets else None

    def credentials_env(self, role: Role) -> dict[str, str]:
        """What a child process of ``role`` needs in its environment to log in (nothing on the open bus)."""
        return {"KERNELRANK_NATS_CREDENTIALS": str(self._file(role))} if self.secrets else {}

    def _file(self, role: Role) -> Path:
        assert self.secrets is not None
        if role is Role.WORKER:
            return issued_workers.credential_file(self.secrets, WORKER)
        return self.secrets / f"{role.value}.json"


@pytest.fixture(params=["open", "authed"])
def on_bus(request: pytest.FixtureRequest) -> OnBus:
    if request.param == "open":
        return OnBus(request.getfixturevalue("make_system"), request.getfixturevalue("nats_url"))
    authed = request.getfixturevalue("authed_nats")
    return OnBus(request.getfixturevalue("make_authed_system"), authed.url, authed.secrets)
