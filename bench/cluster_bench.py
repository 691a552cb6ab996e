"""Failover on a three-node NATS cluster: how long the bus is without a leader, and what senders wait meanwhile.

    python bench/cluster_bench.py [--baseline 100] [--burst 300] [--in-flight 8]

Starts what tests/faults/test_cluster_failover.py starts (three nats-servers from deploy/nats/kernelrank-nats.conf,
``kernelrank core`` at three replicas, two worker processes with their own credentials and a fake runner of 50 ms),
then, with submissions sent as the Discord adapter sends them (``Bus.request``, ``in_flight`` at a time):

1. a baseline burst, no failure;
2. a burst during which the node leading JOBS is killed (SIGKILL) once a fifth is answered, then restarted, then
   the node leading EVENTS is killed once three fifths are;
3. for each kill: the time until a live node reports a new leader of that stream, the time until the first
   submission sent after the kill is accepted, and how long the killed node takes to report itself healthy
   (caught up) after its restart; and the submit-to-acceptance times of the submissions sent within 10 s of it.

Prints a markdown table; writes ``cluster_bench.md`` and ``cluster_bench.json`` to ``$OUT`` when set. Figures, not
pass/fail checks.
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
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "faults"), str(REPO / "tests")]

from cluster_kit import NatsCluster  # noqa: E402
from fault_kit import KERNEL, actor, core_process, service_env, wait_for_core, worker_process  # noqa: E402

from core.contracts import subjects  # noqa: E402
from core.contracts.bus import Bus, BusError  # noqa: E402
from core.contracts.commands import submit_command  # noqa: E402
from core.contracts.credentials import read  # noqa: E402
from core.contracts.messages import Platform, ReplyTo, Tone  # noqa: E402
from core.contracts.roles import Role  # noqa: E402
from core.launch.cluster import write_accounts  # noqa: E402

PROBLEM = REPO / "tests" / "fixtures" / "harness" / "vectoradd"
WINDOW_S = 10.0  # submissions sent this long after a kill count as "during the failover"


@dataclass
class Sent:
    at: float
    took_ms: float
    accepted: bool


@dataclass
class Kill:
    stream: str
    node: str
    at: float
    new_leader_s: float = 0.0
    caught_up_s: float = 0.0
    sent: list[Sent] = field(default_factory=list)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def burst(bus: Bus, count: int, in_flight: int, tag: str, answered: list[Sent]) -> None:
    slots = asyncio.Semaphore(in_flight)

    async def one(index: int) -> None:
        cmd = submit_command(
            actor(f"user{index % 10}"),
            ReplyTo(Platform.DISCORD, "cluster-bench"),
            "k.py",
            KERNEL + f"# {tag} {index}\n".encode(),
            leaderboard="vectoradd",
            mode="test",
        )
        async with slots:
            started = time.monotonic()
            try:
                reply = await bus.request(cmd, timeout_s=60)
                accepted = reply.tone is not Tone.ERROR
            except BusError:
                accepted = False
            answered.append(Sent(started, (time.monotonic() - started) * 1e3, accepted))

    await asyncio.gather(*(one(i) for i in range(count)))


async def kill_leader(cluster: NatsCluster, stream: str) -> Kill:
    node = await asyncio.to_thread(cluster.leader, stream)
    kill = Kill(stream, node, time.monotonic())
    cluster.kill(node)
    await asyncio.to_thread(cluster.leader, stream)
    kill.new_leader_s = time.monotonic() - kill.at
    return kill


async def restart(cluster: NatsCluster, kill: Kill) -> None:
    started = time.monotonic()
    cluster.restart(kill.node)
    await asyncio.to_thread(cluster.wait_healthy, kill.node, 300)
    kill.caught_up_s = time.monotonic() - started


async def answered_at_least(answered: list[Sent], count: int) -> None:
    while len(answered) < count:
        await asyncio.sleep(0.05)


async def measure(work: Path, args: argparse.Namespace) -> tuple[list[Sent], list[Kill]]:
    home = work / "var"
    env = service_env("", home, work / "problems", nats_replicas="3", log_level="WARNING")
    for name in ("cpu-1", "cpu-2"):
        subprocess.run(
            [sys.executable, "-m", "core.launch.main", "workers", "add", name, "--pool", "CPU"],
            cwd=REPO,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    cluster = NatsCluster(work / "nats", write_accounts(home / "secrets", work / "accounts.conf"))
    env["KERNELRANK_NATS_URL"] = cluster.urls
    processes = []
    bus = None
    try:
        cluster.start()
        processes.append(core_process(env, work / "core.log").start())
        for name in ("cpu-1", "cpu-2"):
            worker_env = {**env, "KERNELRANK_NATS_CREDENTIALS": str(home / "secrets" / "workers" / f"{name}.json")}
            processes.append(
                worker_process(
                    worker_env, work / f"{name}.log", work / f"{name}.ev", delay_s=0.05, concurrency=4
                ).start()
            )
        bus = await Bus.connect(cluster.urls, "cluster-bench", read(home / "secrets" / "discord.json", Role.DISCORD))
        await wait_for_core(bus, timeout_s=120)
        baseline: list[Sent] = []
        await burst(bus, args.baseline, args.in_flight, "baseline", baseline)
        during: list[Sent] = []
        sending = asyncio.create_task(burst(bus, args.burst, args.in_flight, "failover", during))
        await answered_at_least(during, args.burst // 5)
        jobs = await kill_leader(cluster, subjects.JOBS)
        await restart(cluster, jobs)
        await answered_at_least(during, 3 * args.burst // 5)
        events = await kill_leader(cluster, subjects.EVENTS)
        await sending
        await restart(cluster, events)
    finally:
        for process in processes:
            process.stop()
        if bus is not None:
            await bus.close()
        cluster.stop()
    for kill in (jobs, events):
        kill.sent = [s for s in during if kill.at <= s.at < kill.at + WINDOW_S]
    return baseline, [jobs, events]


def first_accepted_s(kill: Kill) -> float:
    after = [s.at + s.took_ms / 1e3 - kill.at for s in kill.sent if s.accepted]
    return min(after) if after else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=int, default=100, help="submissions before any failure")
    parser.add_argument("--burst", type=int, default=300, help="submissions in the burst with the two kills")
    parser.add_argument("--in-flight", type=int, default=8, help="submissions waiting for their answer at once")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kernelrank-cluster-bench-"))
    shutil.copytree(PROBLEM, work / "problems" / "vectoradd")
    try:
        baseline, kills = asyncio.run(measure(work, args))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [
        ("no failure", len(baseline), sum(not s.accepted for s in baseline), baseline, None),
        *((f"{k.stream} leader killed", len(k.sent), sum(not s.accepted for s in k.sent), k.sent, k) for k in kills),
    ]
    lines = [
        "| phase | sent | refused | p50 accept (ms) | p95 accept (ms) | max (ms) | new leader (s) "
        "| first accept after kill (s) | restarted node caught up (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    report = []
    for name, sent, refused, samples, kill in rows:
        took = [s.took_ms for s in samples]
        figures = {
            "phase": name,
            "sent": sent,
            "refused": refused,
            "p50_ms": percentile(took, 0.5),
            "p95_ms": percentile(took, 0.95),
            "max_ms": max(took, default=float("nan")),
            "new_leader_s": kill.new_leader_s if kill else None,
            "first_accept_s": first_accepted_s(kill) if kill else None,
            "caught_up_s": kill.caught_up_s if kill else None,
        }
        report.append(figures)
        extra = (
            f"{kill.new_leader_s:.2f} | {figures['first_accept_s']:.2f} | {kill.caught_up_s:.2f}"
            if kill
            else "- | - | -"
        )
        lines.append(
            f"| {name} | {sent} | {refused} | {figures['p50_ms']:.0f} | {figures['p95_ms']:.0f} "
            f"| {figures['max_ms']:.0f} | {extra} |"
        )
    print("\n".join(lines))
    if out := os.environ.get("OUT"):
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "cluster_bench.md").write_text("\n".join(lines) + "\n")
        (Path(out) / "cluster_bench.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
