"""What handlers need, in one object built once by ``core.service.bootstrap`` (no globals, no hidden wiring).

``publish_job`` and ``publish_reply`` are plain callables, so a test hands the handlers a DuckDB file and lists that
collect jobs and messages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime

from core.contracts.config import Settings
from core.contracts.messages import Reply, RunJob
from core.service.acceptance import OncePerCommand
from core.service.db import Database, Writer
from core.service.leaderboards import BoardCache
from core.service.linkcodes import LinkCodes
from core.service.pending import ReferenceRuns, Reruns, Validations
from core.service.people import People
from core.service.pools import PoolBoard
from core.service.ratelimit import RateLimiter
from core.service.runs import RunBook


@dataclass(frozen=True)
class Deps:
    db: Database
    writer: Writer
    settings: Settings
    publish_job: Callable[[RunJob], Awaitable[bool]]
    boards: BoardCache
    people: People
    limiter: RateLimiter
    runs: RunBook  # the one record of runs waiting for their result
    pools: PoolBoard  # the workers' latest PoolStatus reports
    submitting: OncePerCommand  # submissions being handled, by command id
    links: LinkCodes  # one-time codes that join two accounts into one person
    now: Callable[[], datetime]
    validations: Validations  # leaderboards waiting for their reference's test run
    gpu_pools: tuple[str, ...]  # the GPU pools this core queues jobs for
    reruns: Reruns  # the podium's re-runs at a challenge's close
    publish_reply: Callable[[Reply], Awaitable[object]]  # a message to a channel beyond the command's own answer
    references: ReferenceRuns = field(default_factory=ReferenceRuns)  # the reference's timed runs under way
