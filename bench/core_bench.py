"""Core throughput benchmark: the real core and queue with a runner that answers at once.

    python bench/core_bench.py [--preload-runs 1000000] [--latency 500] [--sustained 3000] [--burst 5000] [--json F]

Starts an embedded nats-server, the core (``kernelrank core``) and a fake-backend worker
(``kernelrank worker --backend fake``) as separate processes, exactly as ``kernelrank up`` would, then:

1. submit-to-accepted latency: sequential submissions, each timed from request to the core's answer
   (validated, stored in DuckDB, its job queued);
2. sustained rate: submissions with ``--in-flight`` outstanding (64), accepted per second, and results stored per second
   (until every run's final reply is out);
3. a burst of submissions fired at once, then checked: every run has exactly one final reply and, in the
   database after the core stops, exactly one stored result;
4. with ``--preload-runs`` runs stored (leaderboards holding the real vectoradd problem, rankings rebuilt, and one
   person with ``--long-history`` submissions), the latency of ``list``, ``show`` and that person's page through
   NATS and the core, every answer checked (an error reply stops the bench: it is never timed); that page's size
   on the bus; submit-to-accepted while 64 of those pages are asked at once; and the core's resident memory.

CPU seconds of the core, nats-server and worker processes over the sustained phase are shown per
submission. Prints a table (and writes it as JSON with ``--json``); figures, not pass/fail checks.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from storage_bench import BOARDS, GPUS, START, bulk_load, percentile  # noqa: E402
from system_kit import running  # noqa: E402

from core.contracts.bus import Bus, CoreUnavailable  # noqa: E402
from core.contracts.commands import query_command, submit_command  # noqa: E402
from core.contracts.messages import Actor, Command, CommandKind, Platform, Reply, ReplyTo, Tone, encode  # noqa: E402
from core.service.leaderboards import leaderboard_for  # noqa: E402
from harness.loading import load_problem  # noqa: E402
from storage import Store  # noqa: E402

USERS = 50  # people submitting; each is created once, then cached by the core
KERNEL = (REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py").read_bytes()
PROBLEM = REPO / "tests" / "fixtures" / "harness" / "vectoradd"


def preload(db: Path, runs: int, long_history: int) -> int:
    """``runs`` runs in bulk (``storage_bench.bulk_load``), then each leaderboard given the real problem (the
    vectoradd fixture, so ``Problem.from_dict`` decodes it and ``show`` answers for real), and one more person,
    ``long-history``, with ``long_history`` submissions (two runs each) spread over every leaderboard; rankings
    rebuilt from it all. Returns that person's id."""
    bulk_load(db, runs)
    problem = load_problem(PROBLEM)
    with Store(db) as store:
        for board in BOARDS:  # upsert keeps each leaderboard's seed and creation time
            store.upsert_leaderboard(dataclasses.replace(leaderboard_for(problem, GPUS), name=board, gpus=GPUS))
        person_id = store.person("cli", "long-history", "long-history")
    con = duckdb.connect(str(db))
    con.execute("SET GLOBAL TimeZone = 'UTC'")
    (first,) = con.execute("SELECT max(id) + 1 FROM submissions").fetchone()
    con.execute(f"""
        INSERT INTO submissions (id, command_id, person_id, leaderboard, file_name, code_sha, mode, reply_to,
                                 created_at)
        SELECT i, 'long-' || i, {person_id}, 'board-' || i % {len(BOARDS)}, 'submission.py',
               (SELECT sha256 FROM code_blobs LIMIT 1), 'ranked',
               '{{"platform": "cli", "channel": "", "thread": "", "message": ""}}',
               TIMESTAMPTZ '{START.isoformat()}' + to_microseconds(((i - {first}) * 500e6)::BIGINT)
        FROM range({first}, {first + long_history}) t(i);
        SELECT setval('submission_id_seq', {first + long_history});
        INSERT INTO runs (run_id, submission_id, gpu, state, status, score_us, result, worker, attempts, gpu_s,
                          created_at, finished_at)
        SELECT 'long-' || s.id || '-' || j, s.id, ({GPUS!r})[1 + (s.id + j) % {len(GPUS)}], 'done', 'passed',
               40 + hash(s.id, j) % 1000 / 10.0, '{{}}', 'bench-worker', 1, 2.1, s.created_at, s.created_at
        FROM submissions s, range(2) r(j) WHERE s.person_id = {person_id};
    """)
    con.execute("CHECKPOINT")
    con.close()
    with Store(db) as store:  # personal bests (and summaries) from the loaded runs: show reads a full board
        store.rebuild_rankings()
    return person_id


def profile(pid: int, out: Path | None) -> subprocess.Popen | None:
    """py-spy sampling the core (its folded stacks written to ``out`` when interrupted), if asked for."""
    if out is None:
        return None
    py_spy = shutil.which("py-spy") or sys.exit("--py-spy needs py-spy on the PATH (pip install py-spy)")
    command = [py_spy, "record", "--pid", str(pid), "--rate", "250", "--format", "raw", "--output", str(out)]
    return subprocess.Popen([*command, "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cpu_s(pid: int) -> float:
    """User plus system CPU seconds a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Client:
    def __init__(self, bus: Bus, route: str) -> None:
        self.bus, self.route, self.serial = bus, route, 0

    async def submit(self, timeout_s: float = 60) -> tuple[float, Reply]:
        self.serial += 1
        cmd = submit_command(
            Actor(Platform.DISCORD, f"user{self.serial % USERS}"),
            ReplyTo(Platform.DISCORD, self.route),
            "k.py",
            KERNEL + f"# variant {self.serial}\n".encode(),
            leaderboard="vectoradd",
        )
        started = time.perf_counter()
        reply = await self.bus.request(cmd, timeout_s=timeout_s)
        if not reply.data.get("runs"):
            raise RuntimeError(f"submission refused: {reply.parts[0].text}")
        return (time.perf_counter() - started) * 1e3, reply

    async def many(self, count: int, in_flight: int) -> list[Reply]:
        slots = asyncio.Semaphore(in_flight)

        async def one() -> Reply:
            async with slots:
                return (await self.submit())[1]

        return await asyncio.gather(*(one() for _ in range(count)))

    async def finals(self, run_ids: set[str], idle_s: float = 5.0) -> dict[str, int]:
        """Final replies per run id on this route, read until ``run_ids`` are all seen and nothing more comes."""
        seen: dict[str, int] = {}
        stream = self.bus.follow_replies(self.route, Platform.DISCORD)
        try:
            while True:
                wait = idle_s if run_ids <= seen.keys() else 120
                reply = await asyncio.wait_for(anext(stream), wait)
                if reply.final and reply.in_reply_to in run_ids:
                    seen[reply.in_reply_to] = seen.get(reply.in_reply_to, 0) + 1
        except TimeoutError:
            return seen
        finally:
            await stream.aclose()


def bench_query(kind: CommandKind, **args: object) -> Command:
    return query_command(Actor(Platform.DISCORD, "bench"), ReplyTo(Platform.DISCORD, "q"), kind, **args)


def checked(reply: Reply, ok: Callable[[dict], bool], what: str) -> Reply:
    """The reply, if it is the real answer: an error reply (or a wrong one) stops the bench, never gets timed."""
    if reply.tone is Tone.ERROR or not ok(reply.data):
        raise RuntimeError(f"{what} answered wrongly: {' '.join(p.text for p in reply.parts)[:300]}")
    return reply


async def timed_queries(bus: Bus, cmd: Command, ok: Callable[[dict], bool], count: int) -> list[float]:
    """Milliseconds of ``count`` requests of ``cmd``, one at a time, each answer checked."""
    checked(await bus.request(cmd, timeout_s=30), ok, cmd.kind.value)  # warm-up
    times = []
    for _ in range(count):
        started = time.perf_counter()
        reply = await bus.request(cmd, timeout_s=30)
        times.append((time.perf_counter() - started) * 1e3)
        checked(reply, ok, cmd.kind.value)
    return times


async def query_rows(bus: Bus, args: argparse.Namespace, submitter: Client) -> list[tuple[str, str]]:
    """Read latency with ``--preload-runs`` stored: list, show, the long-history person's page; then that page
    asked 64 at a time while submissions are timed one by one (a crowd must not slow acceptance)."""
    show = bench_query(CommandKind.SHOW, leaderboard="board-3", gpu="H100", limit=10)
    person = bench_query(CommandKind.PERSON, who=f"#{args.long_person}")
    asks = [
        (
            "list (home page, health)",
            bench_query(CommandKind.LIST),
            lambda d: {b["name"] for b in d["leaderboards"]} >= set(BOARDS),
        ),
        ("show top 10", show, lambda d: len(d["rankings"]["H100"]) == 10),
        (
            f"person page, {args.long_history:,} submissions",
            person,
            lambda d: len(d["bests"]) == len(BOARDS) * len(GPUS) and d["progress"][0]["points"],
        ),
    ]
    rows = []
    for name, cmd, ok in asks:
        times = await timed_queries(bus, cmd, ok, args.queries)
        rows.append(
            (
                f"{name} via core, {args.preload_runs:,} runs: p50 / p95",
                f"{percentile(times, 0.5):.1f} / {percentile(times, 0.95):.1f} ms",
            )
        )
    page = await bus.request(person, timeout_s=30)
    rows.append(("  ... person reply size on the bus", f"{len(encode(page)) / 1024:.0f} KiB"))

    stop = asyncio.Event()
    answers = {"ok": 0, "busy": 0, "late": 0}

    async def crowd() -> None:
        while not stop.is_set():
            try:
                reply = await bus.request(person, timeout_s=10)  # the API's own patience
            except CoreUnavailable:
                answers["late"] += 1
                continue
            answers["busy" if reply.tone is Tone.ERROR else "ok"] += 1
            await asyncio.sleep(reply.data.get("retry_after_s", 0) if reply.tone is Tone.ERROR else 0)

    crowds = [asyncio.create_task(crowd()) for _ in range(64)]  # each waits the Retry-After it is told
    await asyncio.sleep(1)
    accept, refused = [], 0
    for _ in range(max(10, args.queries // 2)):
        try:
            accept.append((await submitter.submit(timeout_s=10))[0])
        except CoreUnavailable:  # not accepted within 10 s: the old core let a crowd of readers starve submissions
            refused += 1
    stop.set()
    await asyncio.gather(*crowds)
    rows.append(
        (
            "submit-to-accepted under 64 person pages in flight: p50 / p95",
            (f"{percentile(accept, 0.5):.1f} / {percentile(accept, 0.95):.1f} ms " if accept else "")
            + f"({refused} submissions not accepted within 10 s; "
            f"{answers['ok']} pages answered, {answers['busy']} refused as busy, {answers['late']} not within 10 s)",
        )
    )
    return rows


def run_ids(replies: list[Reply]) -> set[str]:
    return {run["run_id"] for reply in replies for run in reply.data["runs"]}


async def measure(url: str, args: argparse.Namespace, pids: dict[str, int]) -> tuple[list[tuple[str, str]], set[str]]:
    bus = await Bus.connect(url, name="core-bench")
    rows: list[tuple[str, str]] = []
    try:
        ask = query_command(Actor(Platform.DISCORD, "bench"), ReplyTo(Platform.DISCORD, "bench"), CommandKind.LIST)
        for _ in range(600):
            try:
                await bus.request(ask, timeout_s=2)
                break
            except CoreUnavailable:
                await asyncio.sleep(0.1)

        latency = Client(bus, "latency")
        await latency.submit()  # warm-up
        samples = [(await latency.submit())[0] for _ in range(args.latency)]
        rows += [
            ("submit-to-accepted p50 (sequential)", f"{percentile(samples, 0.50):.1f} ms"),
            ("submit-to-accepted p95 (sequential)", f"{percentile(samples, 0.95):.1f} ms"),
        ]

        sustained = Client(bus, "sustained")
        profiler = profile(pids["core"], args.py_spy)
        cpu_before = {name: cpu_s(pid) for name, pid in pids.items()}
        started = time.perf_counter()
        accepted = await sustained.many(args.sustained, in_flight=args.in_flight)
        accepted_s = time.perf_counter() - started
        finals = await sustained.finals(run_ids(accepted), idle_s=1.0)
        stored_s = time.perf_counter() - started - 1.0
        cpu_ms = {name: (cpu_s(pid) - cpu_before[name]) * 1e3 / args.sustained for name, pid in pids.items()}
        if profiler:  # stopped where the CPU is read, so the profile covers what the CPU figure counts
            profiler.send_signal(signal.SIGINT)  # py-spy writes its samples when interrupted
            profiler.wait(60)
        rows += [
            (
                f"sustained: {args.sustained} submissions, {args.in_flight} in flight",
                f"{args.sustained / accepted_s:.0f} /s accepted",
            ),
            ("  ... results stored and replied", f"{len(finals) / stored_s:.0f} /s"),
            (
                "  ... CPU per submission (submit to reply)",
                ", ".join(f"{name} {ms:.2f} ms" for name, ms in cpu_ms.items()),
            ),
        ]

        burst = Client(bus, "burst")
        started = time.perf_counter()
        replies = await burst.many(args.burst, in_flight=args.burst)
        burst_ids = run_ids(replies)
        counts = await burst.finals(burst_ids)
        elapsed = time.perf_counter() - started
        rows += [
            (f"burst of {args.burst}: accepted", f"{len(burst_ids)} runs, all replied within {elapsed:.1f} s"),
            (
                "  ... final replies exactly once",
                f"{sum(c == 1 for c in counts.values())} of {len(burst_ids)}"
                f" (missing {len(burst_ids - counts.keys())}, "
                f"duplicated {sum(c > 1 for c in counts.values())})",
            ),
        ]

        if args.preload_runs:
            rows += await query_rows(bus, args, latency)
        rows.append(("core resident memory after the run", f"{rss_mib(pids['core']):.0f} MiB"))
        return rows, burst_ids
    finally:
        await bus.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preload-runs", type=int, default=1_000_000)
    parser.add_argument("--latency", type=int, default=500)
    parser.add_argument("--sustained", type=int, default=3000)
    parser.add_argument("--burst", type=int, default=5000)
    parser.add_argument("--in-flight", type=int, default=64, help="concurrent submissions in the sustained phase")
    parser.add_argument("--queries", type=int, default=200, help="timed requests of each query")
    parser.add_argument(
        "--long-history", type=int, default=30_000, help="submissions of the person whose page is timed"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the table here as JSON")
    parser.add_argument("--py-spy", type=Path, default=None, help="write py-spy's folded stacks of the core here")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kernelrank-bench-"))
    shutil.copytree(PROBLEM, work / "problems" / "vectoradd")
    db = work / "var" / "kernelrank.duckdb"
    db.parent.mkdir(parents=True)
    if args.preload_runs:
        started = time.perf_counter()
        args.long_person = preload(db, args.preload_runs, args.long_history)
        print(
            f"preloaded {args.preload_runs:,} runs and {args.long_history:,} submissions of one person in "
            f"{time.perf_counter() - started:.1f} s",
            flush=True,
        )
    commands = {"core": ["core"], "worker": ["worker", "--gpu", "CPU", "--backend", "fake", "--concurrency", "256"]}
    with running(work, commands, KERNELRANK_RATE_LIMIT_PER_MINUTE="100000000") as system:
        pids = {"core": system.procs["core"].pid, "nats-server": system.nats_pid, "worker": system.procs["worker"].pid}
        rows, burst_ids = asyncio.run(measure(system.url, args, pids))
    with Store(db) as store:
        stored = sum(1 for run_id in burst_ids if (run := store.run(run_id)) and run.state == "done")
    rows.append(("burst runs with a stored result (after core stop)", f"{stored} of {len(burst_ids)}"))
    width = max(len(name) for name, _ in rows)
    print(f"\n{'measure'.ljust(width)}  value\n{'-' * width}  -----")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "load": load, "args": vars(args) | {"json": str(args.json)}}, indent=1)
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
