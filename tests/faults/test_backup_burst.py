"""``admin backup`` while a burst of submissions runs through the core, then ``kernelrank restore`` into a fresh home.

Real processes: a nats-server, ``kernelrank core`` and a worker process. Every run whose final reply went out before
the backup was asked for was stored before it (the core replies after it stores), so the restored database must hold
each of them, finished. A core started on the restored file (its secrets kept, as on the same host) then records
from JetStream the results that came after the backup, so every run the backup holds ends finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fault_kit import (
    REPO,
    NatsProcess,
    actor,
    core_process,
    service_env,
    stored_runs,
    submit_all,
    wait_for_core,
    worker_process,
)

from core.contracts.bus import Bus
from core.contracts.commands import query_command
from core.contracts.messages import CommandKind, Platform, ReplyTo, Tone

SUBMISSIONS = 120
ROUTE = "backup-burst"
EVENT_WAIT_S = 300


async def collect_finished(bus: Bus, finished: set[str], grew: asyncio.Event) -> None:
    """Add the run id of every final reply on ``ROUTE`` to ``finished`` (setting ``grew``), until cancelled."""
    async for reply in bus.follow_replies(ROUTE, Platform.DISCORD):
        if reply.final and reply.in_reply_to:
            finished.add(reply.in_reply_to)
            grew.set()


async def all_finished(run_ids: set[str], finished: set[str], grew: asyncio.Event) -> None:
    while not run_ids <= finished:
        grew.clear()
        await asyncio.wait_for(grew.wait(), EVENT_WAIT_S)


@pytest.mark.slow
async def test_a_backup_taken_mid_burst_restores_every_run_stored_before_it(tmp_path: Path, problems: Path) -> None:
    nats = NatsProcess(tmp_path / "nats")
    home = tmp_path / "var"
    env = service_env(nats.start(), home, problems, admins="discord:boss")
    core = core_process(env, tmp_path / "core.log").start()
    worker = worker_process(env, tmp_path / "worker.log", tmp_path / "evaluations", delay_s=0.05, concurrency=4)
    worker.start()
    bus = await Bus.connect(env["KERNELRANK_NATS_URL"], "backup-senders")
    finished: set[str] = set()
    follower = again = None
    try:
        await wait_for_core(bus, timeout_s=EVENT_WAIT_S)  # the core has made the streams the follower reads
        grew = asyncio.Event()
        follower = asyncio.create_task(collect_finished(bus, finished, grew))
        halfway = asyncio.Event()
        burst = asyncio.create_task(
            submit_all(bus, SUBMISSIONS, ROUTE, in_flight=8, marks=((SUBMISSIONS // 2, halfway),))
        )
        await asyncio.wait_for(halfway.wait(), EVENT_WAIT_S)
        while not finished:  # and some run finished: acceptance can outrun the first result by far
            grew.clear()
            if not finished:
                await asyncio.wait_for(grew.wait(), EVENT_WAIT_S)
        stored_before = set(finished)
        ask = query_command(
            actor("boss"), ReplyTo(Platform.DISCORD, "ops"), CommandKind.BACKUP, path="mid-burst.duckdb"
        )
        answer = await bus.request(ask, timeout_s=120)
        outcomes = await asyncio.wait_for(burst, EVENT_WAIT_S)
        await all_finished(set().union(*(o.run_ids for o in outcomes)), finished, grew)  # none left in flight
        worker.stop()
        core.stop()

        assert answer.tone is not Tone.ERROR, answer.parts
        backup = Path(answer.data["path"])
        assert backup == (home / "backups" / "mid-burst.duckdb").absolute() and stored_before
        fresh = tmp_path / "fresh"
        shutil.copytree(home / "secrets", fresh / "secrets")  # the result key: results verify as before
        restored = subprocess.run(
            [sys.executable, "-m", "core.launch.main", "restore", str(backup)],
            cwd=REPO,
            env={**env, "KERNELRANK_HOME": str(fresh)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert restored.returncode == 0, restored.stderr
        assert restored.stdout.startswith(f"Restored {answer.data['submissions']} submissions")
        at_restore = stored_runs(fresh / "kernelrank.duckdb")
        assert all(at_restore[run].state == "done" for run in stored_before)
        assert len(at_restore) < len(stored_runs(home / "kernelrank.duckdb"))  # the burst went on after the backup

        again = core_process({**env, "KERNELRANK_HOME": str(fresh)}, tmp_path / "restored-core.log").start()
        await wait_for_core(bus, timeout_s=EVENT_WAIT_S)  # it answers once it has recovered what JetStream holds
        again.stop()
    finally:
        if follower is not None:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        await bus.close()
        for process in (worker, core, again):
            if process is not None:
                process.stop()
        nats.stop()

    finished = stored_runs(fresh / "kernelrank.duckdb")
    assert finished.keys() == at_restore.keys()
    assert {(run.state, run.status) for run in finished.values()} == {("done", "passed")}
    assert any(run.state != "done" for run in at_restore.values())  # the backup did hold runs still in flight
