"""``GET /metrics``: figures for Prometheus, in its text format (version 0.0.4), from the API process.

Series, and where each comes from:
- ``kernelrank_core_reply_seconds`` (histogram, by command): how long the core took to answer this process.
- ``kernelrank_runs{status}``, ``kernelrank_submissions``, ``kernelrank_people``: the ``stats`` command (public).
- ``kernelrank_queue_waiting{pool}``, ``kernelrank_queue_running{pool}``, ``kernelrank_pool_workers{pool}`` (the
  workers whose heartbeats the core has), ``kernelrank_pool_capacity{pool}``: the ``queue`` command, which needs a
  person: a scrape that sends a personal token (Prometheus' ``authorization`` setting) gets them.
- ``kernelrank_up{part}``: 1 where the API, the core, answered this scrape.
"""

from __future__ import annotations

import bisect
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from core.contracts.commands import query_command
from core.contracts.messages import Actor, Command, CommandKind, Platform, Reply, ReplyTo, Tone, new_id

BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Ask = Callable[[Command], Awaitable["Reply | Response"]]
Credential = Callable[[Request], str]


class ReplyTimes:
    """A histogram per command of the core's reply times, as Prometheus keeps one: cumulative buckets."""

    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = {}
        self.sums: dict[str, float] = {}

    def observe(self, command: str, seconds: float) -> None:
        counts = self.counts.setdefault(command, [0] * (len(BUCKETS_S) + 1))
        counts[bisect.bisect_left(BUCKETS_S, seconds)] += 1
        self.sums[command] = self.sums.get(command, 0.0) + seconds

    def lines(self) -> list[str]:
        out = _head("kernelrank_core_reply_seconds", "histogram", "how long the core took to answer the API")
        for command, counts in sorted(self.counts.items()):
            running = 0
            for bound, count in zip((*BUCKETS_S, float("inf")), counts, strict=True):
                running += count
                le = "+Inf" if bound == float("inf") else repr(bound)
                out.append(f'kernelrank_core_reply_seconds_bucket{{command="{command}",le="{le}"}} {running}')
            out.append(f'kernelrank_core_reply_seconds_sum{{command="{command}"}} {self.sums[command]:.6f}')
            out.append(f'kernelrank_core_reply_seconds_count{{command="{command}"}} {running}')
        return out


def metrics_endpoint(ask: Ask, times: ReplyTimes, credential: Credential) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        lines = [
            *_head("kernelrank_up", "gauge", "1 where this part answered the scrape"),
            'kernelrank_up{part="api"} 1',
        ]
        stats = await _ask(ask, CommandKind.STATS, "")
        lines.append(f'kernelrank_up{{part="core"}} {int(stats is not None)}')
        if stats is not None:
            lines += _stats(stats.data)
        sha = credential(request)
        queue = await _ask(ask, CommandKind.QUEUE, sha) if sha else None
        if queue is not None:
            lines += _queue(queue.data.get("pools", {}))
        lines += times.lines()
        return PlainTextResponse("\n".join(lines) + "\n", media_type=CONTENT_TYPE)

    return endpoint


async def _ask(ask: Ask, kind: CommandKind, sha: str) -> Reply | None:
    cmd = query_command(Actor(platform=Platform.CLI, user_id=""), ReplyTo(Platform.CLI, new_id()), kind)
    cmd.credential_sha256 = sha
    reply = await ask(cmd)
    return reply if isinstance(reply, Reply) and reply.tone is not Tone.ERROR else None


def _stats(data: dict[str, Any]) -> list[str]:
    lines = _head("kernelrank_runs", "gauge", "runs by outcome (queued and running ones under those names)")
    lines += [f'kernelrank_runs{{status="{s}"}} {n}' for s, n in sorted(data.get("runs_by_status", {}).items())]
    for name, about in (("submissions", "submissions kept"), ("people", "people known"), ("leaderboards", "boards")):
        lines += [*_head(f"kernelrank_{name}", "gauge", about), f"kernelrank_{name} {data.get(name, 0)}"]
    return lines


def _queue(pools: dict[str, dict[str, int]]) -> list[str]:
    lines = []
    for key, series, about in (
        ("waiting", "kernelrank_queue_waiting", "runs waiting for a worker"),
        ("running", "kernelrank_queue_running", "runs a worker has started"),
        ("workers", "kernelrank_pool_workers", "workers whose heartbeats the core has"),
        ("capacity", "kernelrank_pool_capacity", "jobs the pool's workers take at once"),
    ):
        lines += _head(series, "gauge", about)
        lines += [f'{series}{{pool="{pool}"}} {figures.get(key, 0)}' for pool, figures in sorted(pools.items())]
    return lines


def _head(name: str, kind: str, about: str) -> list[str]:
    return [f"# HELP {name} {about}", f"# TYPE {name} {kind}"]
