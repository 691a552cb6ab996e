"""Web pages with a long history: home, a ranking, a challenge and a person with a long history, over HTTP.

    python bench/web_bench.py [--preload-runs 1000000] [--long-history 30000] [--requests 100] [--concurrency 1 16 64]

Fills a database as ``core_bench.py --preload-runs`` does (2,000 people, 10 leaderboards holding the real vectoradd
problem, 3 GPUs, and one person with ``--long-history`` submissions), adds an open challenge on ``board-3``, then
starts an embedded nats-server, the core and the API (``kernelrank api``) as separate processes, as ``kernelrank up``
would. Each page is asked ``--requests`` times at each concurrency (a bounded loopback load: httpx, keep-alive,
that many requests in flight), without a token, as a visitor's browser asks: first as reloads
(``Cache-Control: no-cache``, so each answer is made anew by the core: what a page costs), then as visitors (whom
the API may answer from its one-second copy, ``adapters/api/cache.py``: what a crowd costs). Every response is
checked (status 200 and the text the page must hold); a wrong one is counted as an error, never as a time. Prints
p50 / p95 / errors per page and concurrency; figures, not pass/fail checks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from api_bench import ready  # noqa: E402
from core_bench import PROBLEM, preload  # noqa: E402
from storage_bench import percentile  # noqa: E402
from system_kit import running  # noqa: E402

from core.contracts.bus import Bus  # noqa: E402
from storage import Store  # noqa: E402
from storage.records import Challenge  # noqa: E402

CHALLENGE = "Weekly vector add"


def pages(person_id: int) -> list[tuple[str, str, str]]:
    """(name, path, text the answer must hold)."""
    return [
        ("home", "/", "board-9"),
        ("ranking", "/leaderboards/board-3/H100", "person-"),
        ("challenge", f"/challenges/{CHALLENGE}", CHALLENGE),
        ("person", f"/people/{person_id}", "long-history"),
    ]


async def load(
    http: httpx.AsyncClient, path: str, must: str, requests: int, concurrency: int, fresh: bool = False
) -> tuple[list, int]:
    """Milliseconds of each right answer, and the number of wrong ones, with ``concurrency`` in flight; ``fresh``
    asks as a reload does (``Cache-Control: no-cache``), so that the page is made anew each time."""
    headers = {"Cache-Control": "no-cache"} if fresh else {}
    times: list[float] = []
    errors = 0
    slots = asyncio.Semaphore(concurrency)

    async def one() -> None:
        nonlocal errors
        async with slots:
            started = time.perf_counter()
            try:
                response = await http.get(path, headers=headers)
            except httpx.HTTPError:
                errors += 1
                return
            took = (time.perf_counter() - started) * 1e3
            if response.status_code == 200 and must in response.text:
                times.append(took)
            else:
                errors += 1

    await asyncio.gather(*(one() for _ in range(requests)))
    return times, errors


async def measure(url: str, api_url_file: Path, args: argparse.Namespace) -> list[str]:
    bus = await Bus.connect(url, name="web-bench")
    try:
        api = await ready(bus, api_url_file)
    finally:
        await bus.close()
    limits = httpx.Limits(max_connections=max(args.concurrency), max_keepalive_connections=max(args.concurrency))
    lines = [
        f"{args.preload_runs:,} runs stored, a person with {args.long_history:,} submissions",
        "| page | in flight | requests | p50 (ms) | p95 (ms) | errors |",
        "|---|---|---|---|---|---|",
    ]
    async with httpx.AsyncClient(base_url=api, timeout=30, limits=limits) as http:
        for name, path, must in pages(args.long_person):
            await load(http, path, must, 5, 1, fresh=True)  # warm-up: templates, the core's caches
            runs = [(c, True) for c in args.fresh_concurrency] + [(c, False) for c in args.concurrency]
            for concurrency, fresh in runs:
                times, errors = await load(http, path, must, max(args.requests, concurrency * 2), concurrency, fresh)
                p50, p95 = (percentile(times, 0.5), percentile(times, 0.95)) if times else (float("nan"),) * 2
                flight = f"{concurrency}{' (reloads)' if fresh else ''}"
                lines.append(f"| {name} | {flight} | {len(times) + errors} | {p50:.1f} | {p95:.1f} | {errors} |")
                print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preload-runs", type=int, default=1_000_000)
    parser.add_argument("--long-history", type=int, default=30_000)
    parser.add_argument("--requests", type=int, default=100, help="requests per page and concurrency (at least 2x it)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64], help="visitors in flight")
    parser.add_argument(
        "--fresh-concurrency", type=int, nargs="*", default=[1, 16], help="reloads in flight (each page made anew)"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kernelrank-web-bench-"))
    shutil.copytree(PROBLEM, work / "problems" / "vectoradd")
    db = work / "var" / "kernelrank.duckdb"
    db.parent.mkdir(parents=True)
    args.long_person = preload(db, args.preload_runs, args.long_history)
    now = datetime.now(UTC)
    with Store(db) as store:
        store.challenges.add(Challenge(CHALLENGE, ["board-3"], now - timedelta(days=1), now + timedelta(days=6)), now)
    try:
        with running(work, {"core": ["core"], "api": ["api"]}) as system:
            lines = asyncio.run(measure(system.url, work / "var" / "run" / "api.url", args))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    load_avg = os.getloadavg()
    print(f"load average at the end: {load_avg[0]:.2f} {load_avg[1]:.2f} {load_avg[2]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
