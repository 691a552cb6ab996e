"""Wiring in one place: the service's dependencies are built here, and nowhere else.

``build_deps`` makes what handlers need from a database, settings and a job publisher (tests pass a list's
``append``-like coroutine and call handlers directly); ``bootstrap`` adds the bus: the signed job queue, and the
service loop that consumes results and progress with the same ``Deps``; ``run_core`` opens the database and runs
it all (``kernelrank core``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from core.contracts.bus import Bus, Role
from core.contracts.config import Settings
from core.contracts.credentials import result_secret
from core.contracts.messages import Reply, RunJob
from core.service.acceptance import OncePerCommand
from core.service.db import Database, Writer
from core.service.deps import Deps
from core.service.jobs import JobQueue
from core.service.leaderboards import BoardCache
from core.service.linkcodes import LinkCodes
from core.service.loop import CoreService
from core.service.pending import Reruns, Validations
from core.service.people import People
from core.service.pools import PoolBoard
from core.service.ratelimit import RateLimiter
from core.service.runs import RunBook
from storage.store import Store  # the one place the database file is opened


def utc_now() -> datetime:
    return datetime.now(UTC)


def build_deps(
    db: Database,
    settings: Settings,
    publish_job: Callable[[RunJob], Awaitable[bool]],
    *,
    now: Callable[[], datetime] = utc_now,
    gpu_pools: tuple[str, ...] = (),
    publish_reply: Callable[[Reply], Awaitable[object]] | None = None,
) -> Deps:
    return Deps(
        db=db,
        writer=Writer(db),
        settings=settings,
        publish_job=publish_job,
        boards=BoardCache(lambda name: db.read(db.store.get_leaderboard, name)),
        people=People(db, settings),
        limiter=RateLimiter(settings.rate_limit_per_minute),
        runs=RunBook(),
        pools=PoolBoard(),
        submitting=OncePerCommand(),
        links=LinkCodes(),
        now=now,
        validations=Validations(),
        gpu_pools=tuple(gpu_pools),
        reruns=Reruns(),
        publish_reply=publish_reply or _nowhere,
    )


async def _nowhere(reply: Reply) -> None:
    """Where a message goes without a bus (handlers called directly)."""


def bootstrap(
    bus: Bus, db: Database, settings: Settings, pools: list[str], *, now: Callable[[], datetime] = utc_now
) -> CoreService:
    jobs = JobQueue(bus, result_secret(settings))
    deps = build_deps(db, settings, jobs.publish, now=now, gpu_pools=tuple(pools), publish_reply=bus.publish_reply)
    return CoreService(bus, deps, jobs, pools)


async def run_core(settings: Settings, url: str, pools: list[str], stop: asyncio.Event) -> None:
    """Open the store, start the service, serve until ``stop`` is set, then checkpoint and close."""
    bus = await Bus.connect_as(url, "kernelrank-core", settings, Role.CORE)
    db = Database(await asyncio.to_thread(Store, settings.database))
    service = bootstrap(bus, db, settings, pools)
    try:
        await service.start()
        await stop.wait()
    finally:
        await service.stop()
        await db.close()
        await bus.close()
