"""What the HTTP path adds: submit-to-accepted over HTTP (the API process) against over NATS (a chat adapter's way).

    python bench/api_bench.py [--count 300] [--warmup 30]

Starts an embedded nats-server, the core (``kernelrank core``) and the API (``kernelrank api`` on a free port) as
separate processes, as ``kernelrank up`` would (no worker: acceptance does not wait for one), then times, one at a
time and alternating so that both paths see the same database size:

1. a submission sent over NATS as a chat adapter sends it (``Bus.request``), until the core's acceptance;
2. the same submission as the terminal client sends it: HTTP multipart with a personal token, through the API,
   until the HTTP response with the acceptance;
3. a query (``list``) both ways, and a whole ``kernelrank list`` process (the client's start-up included).

Prints a table of medians and 95th percentiles; writes ``api_bench.json`` and ``api_bench.md`` to ``$OUT`` when set.
Figures, not pass/fail checks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from system_kit import running  # noqa: E402

from core.contracts.bus import Bus, CoreUnavailable  # noqa: E402
from core.contracts.commands import query_command, submit_command  # noqa: E402
from core.contracts.messages import Actor, CommandKind, Platform, ReplyTo, Tone  # noqa: E402

KERNEL = (REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py").read_bytes()
PROBLEM = REPO / "tests" / "fixtures" / "harness" / "vectoradd"
ACTOR = Actor(Platform.DISCORD, "bench", "Bench")


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def ready(bus: Bus, api_url_file: Path) -> str:
    ask = query_command(ACTOR, ReplyTo(Platform.DISCORD, "bench"), CommandKind.LIST)
    for _ in range(600):
        try:
            await bus.request(ask, timeout_s=2)
            if api_url_file.is_file():
                return api_url_file.read_text()
        except CoreUnavailable:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("the core or the API did not start; see core.log and api.log")


async def timed(call) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1e3


async def measure(url: str, api_url_file: Path, args: argparse.Namespace, env: dict[str, str]) -> list[tuple]:
    bus = await Bus.connect(url, name="api-bench")
    try:
        api = await ready(bus, api_url_file)
        made = await bus.request(query_command(ACTOR, ReplyTo(Platform.DISCORD, "b"), CommandKind.TOKEN))
        token = made.data["token"]
        serial = 0

        async def over_nats() -> None:
            nonlocal serial
            serial += 1
            cmd = submit_command(
                ACTOR,
                ReplyTo(Platform.DISCORD, "bench"),
                "k.py",
                KERNEL + f"# {serial}\n".encode(),
                leaderboard="vectoradd",
            )
            reply = await bus.request(cmd, timeout_s=30)
            if reply.tone is Tone.ERROR:
                raise RuntimeError(reply.parts[0].text)

        async with httpx.AsyncClient(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:

            async def over_http() -> None:
                nonlocal serial
                serial += 1
                response = await http.post(
                    "/v1/submissions",
                    data={"leaderboard": "vectoradd"},
                    files={"file": ("k.py", KERNEL + f"# {serial}\n".encode())},
                )
                if response.status_code != 202:
                    raise RuntimeError(response.text)

            async def list_nats() -> None:
                await bus.request(query_command(ACTOR, ReplyTo(Platform.DISCORD, "bench"), CommandKind.LIST))

            async def list_http() -> None:
                (await http.get("/v1/leaderboards")).raise_for_status()

            samples: dict[str, list[float]] = {
                name: [] for name in ("submit/nats", "submit/http", "list/nats", "list/http")
            }
            for index in range(args.warmup + args.count):
                pairs = (
                    ("submit/nats", over_nats),
                    ("submit/http", over_http),
                    ("list/nats", list_nats),
                    ("list/http", list_http),
                )
                for name, call in pairs if index % 2 else reversed(pairs):
                    took = await timed(call)
                    if index >= args.warmup:
                        samples[name].append(took)
        cli = []
        cli_env = {**env, "KERNELRANK_API_URL": api, "KERNELRANK_TOKEN": token}
        for _ in range(args.cli_runs):
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "core.launch.main", "list"],
                cwd=REPO,
                env=cli_env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            cli.append((time.perf_counter() - started) * 1e3)
        samples["`kernelrank list` process"] = cli
    finally:
        await bus.close()
    return [(name, len(values), percentile(values, 0.5), percentile(values, 0.95)) for name, values in samples.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="timed requests per path")
    parser.add_argument("--warmup", type=int, default=30, help="untimed requests per path first")
    parser.add_argument("--cli-runs", type=int, default=10, help="whole `kernelrank list` processes timed")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kernelrank-api-bench-"))
    shutil.copytree(PROBLEM, work / "problems" / "vectoradd")
    try:
        with running(work, {"core": ["core"], "api": ["api"]}, KERNELRANK_RATE_LIMIT_PER_MINUTE="100000000") as system:
            rows = asyncio.run(measure(system.url, work / "var" / "run" / "api.url", args, system.env))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = ["| path | n | p50 (ms) | p95 (ms) |", "|---|---|---|---|"]
    lines += [f"| {name} | {n} | {p50:.1f} | {p95:.1f} |" for name, n, p50, p95 in rows]
    print("\n".join(lines))
    if out := os.environ.get("OUT"):
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "api_bench.md").write_text("\n".join(lines) + "\n")
        (Path(out) / "api_bench.json").write_text(
            json.dumps([{"path": name, "n": n, "p50_ms": p50, "p95_ms": p95} for name, n, p50, p95 in rows], indent=2)
        )


if __name__ == "__main__":
    main()
