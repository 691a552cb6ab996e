"""A core killed with SIGKILL mid-flight loses nothing: every run gets one stored result and one reply."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.contracts.bus import Bus, CoreUnavailable
from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, CommandKind, Platform, Reply, ReplyTo
from runners.fake import FakeRunner
from runners.worker import Worker
from storage.store import Store

REPO = Path(__file__).resolve().parents[2]
KERNEL = REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py"
ROUTE = "crash-test"
IN_FLIGHT = 20


def start_core(url: str, tmp_path: Path, problems: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "KERNELRANK_NATS_URL": url,
        "KERNELRANK_HOME": str(tmp_path / "var"),
        "KERNELRANK_PROBLEMS_DIR": str(problems),
        "KERNELRANK_RATE_LIMIT_PER_MINUTE": "1000",
        "KERNELRANK_GPUS": "CPU",
        "PYTHONPATH": str(REPO),
    }
    return subprocess.Popen([sys.executable, "-m", "core.launch.main", "core"], cwd=tmp_path, env=env)


async def wait_until_core_answers(bus: Bus) -> None:
    ask = query_command(Actor(Platform.DISCORD, "t"), ReplyTo(Platform.DISCORD, ROUTE), CommandKind.LIST)
    for _ in range(300):
        try:
            await bus.request(ask, timeout_s=1)
            return
        except CoreUnavailable:
            await asyncio.sleep(0.1)
    raise AssertionError("the core did not start")


async def read_replies(bus: Bus, idle_s: float) -> list[Reply]:
    """Every reply stored on the route, until none arrives for ``idle_s``."""
    replies, stream = [], bus.follow_replies(ROUTE, Platform.DISCORD)
    try:
        while True:
            replies.append(await asyncio.wait_for(anext(stream), idle_s))
    except TimeoutError:
        return replies
    finally:
        await stream.aclose()


@pytest.mark.slow
async def test_sigkill_of_the_core_with_20_runs_in_flight(nats_url, tmp_path, problems):
    source = KERNEL.read_bytes()
    bus = await Bus.connect(nats_url, name="crash-test")
    core = start_core(nats_url, tmp_path, problems)
    stop = asyncio.Event()
    try:
        await wait_until_core_answers(bus)
        worker = asyncio.create_task(Worker(bus, "CPU", FakeRunner(delay_s=1.0), concurrency=4, poll_s=0.2).run(stop))
        accepted = await asyncio.gather(
            *(
                bus.request(
                    submit_command(
                        Actor(Platform.DISCORD, f"user{i}"),
                        ReplyTo(Platform.DISCORD, ROUTE),
                        "k.py",
                        source,
                        leaderboard="vectoradd",
                    ),
                    timeout_s=10,
                )
                for i in range(IN_FLIGHT)
            )
        )
        run_ids = {run["run_id"] for reply in accepted for run in reply.data["runs"]}
        assert len(run_ids) == IN_FLIGHT

        core.send_signal(signal.SIGKILL)
        core.wait()
        await asyncio.sleep(1.5)  # workers keep finishing runs while the core is down
        core = start_core(nats_url, tmp_path, problems)
        await wait_until_core_answers(bus)

        deadline = asyncio.get_running_loop().time() + 60
        while True:
            finals = [r for r in await read_replies(bus, idle_s=2.0) if r.final and r.in_reply_to in run_ids]
            if {r.in_reply_to for r in finals} == run_ids or asyncio.get_running_loop().time() > deadline:
                break
        assert sorted(r.in_reply_to for r in finals) == sorted(run_ids)  # each run exactly once
        stop.set()
        await worker
    finally:
        stop.set()
        core.send_signal(signal.SIGTERM)
        core.wait(30)
        await bus.close()

    with Store(tmp_path / "var" / "kernelrank.duckdb") as store:
        runs = [store.run(run_id) for run_id in run_ids]
        assert all(run is not None and run.state == "done" and run.status == "passed" for run in runs)
        assert store.stats().submissions == IN_FLIGHT
