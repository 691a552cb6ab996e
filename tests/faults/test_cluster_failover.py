"""A three-node NATS cluster loses the node leading the job stream, then the one leading the results stream, in
the middle of a burst of submissions; each comes back and catches up.

Real processes throughout: three nats-servers from the deployment's node configuration (routes, JetStream, a store
folder each, the users ``kernelrank cluster-users`` writes), ``kernelrank core`` with every stream at three
replicas, ``kernelrank api``, and two worker processes with credentials of their own (``kernelrank workers add``);
the senders log in as the Discord adapter, and the test reads the replies with the core's credentials. Every
sender's answer must match what was stored (accepted: stored, evaluated, one final reply; refused: nothing
evaluated), no submission stored twice, and the restarted nodes hold every message the cluster kept meanwhile.
bench/cluster_bench.py times the same failover."""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys

import httpx
import pytest
from cluster_kit import NatsCluster
from fault_kit import (
    REPO,
    ServiceProcess,
    core_process,
    evaluations_in,
    final_replies,
    service_env,
    stored_commands,
    stored_runs,
    submit_all,
    wait_for_core,
    worker_process,
)

from core.contracts import subjects
from core.contracts.bus import Bus
from core.contracts.credentials import read
from core.contracts.roles import Role
from core.launch.cluster import write_accounts
from core.service.acceptance import NOT_QUEUED

SUBMISSIONS = 200
ROUTE = "cluster-burst"
WORKERS = ("cpu-1", "cpu-2")
EVENT_WAIT_S = 300  # generous: a 2-core CI machine runs nine processes here


def launcher(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "core.launch.main", *args], cwd=REPO, env=env, check=True, timeout=120)


async def caught_up(cluster: NatsCluster, name: str, streams: tuple[str, ...]) -> None:
    """Until ``name`` is healthy again and holds each stream up to its leader's last message."""
    await asyncio.to_thread(cluster.wait_healthy, name, EVENT_WAIT_S)
    for stream in streams:
        for _ in range(EVENT_WAIT_S * 10):
            leader = await asyncio.to_thread(cluster.leader, stream, EVENT_WAIT_S)
            if cluster.last_seq(name, stream) == cluster.last_seq(leader, stream):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"{name} did not catch up on {stream}")


@pytest.mark.slow
async def test_the_cluster_loses_its_stream_leaders_mid_burst_and_every_answer_matches_what_was_stored(
    tmp_path, problems
):
    home = tmp_path / "var"
    env = service_env("", home, problems, nats_replicas="3", api_port="0", log_level="WARNING")
    for name in WORKERS:
        launcher("workers", "add", name, "--pool", "CPU", env=env)
    accounts = write_accounts(home / "secrets", tmp_path / "accounts.conf")
    cluster = NatsCluster(tmp_path / "nats", accounts)
    env["KERNELRANK_NATS_URL"] = cluster.urls
    processes: list[ServiceProcess] = []
    sender = observer = None
    try:
        cluster.start()
        processes.append(core_process(env, tmp_path / "core.log").start())
        api = ServiceProcess([sys.executable, "-m", "core.launch.main", "api"], env, tmp_path / "api.log").start()
        processes.append(api)
        for name in WORKERS:
            worker_env = {**env, "KERNELRANK_NATS_CREDENTIALS": str(home / "secrets" / "workers" / f"{name}.json")}
            log, evaluations = tmp_path / f"{name}.log", tmp_path / f"{name}.evaluations"
            processes.append(worker_process(worker_env, log, evaluations, delay_s=0.05, concurrency=4).start())
        sender = await Bus.connect(
            cluster.urls, "cluster-senders", read(home / "secrets" / "discord.json", Role.DISCORD)
        )
        observer = await Bus.connect(cluster.urls, "cluster-observer", read(home / "secrets" / "core.json", Role.CORE))
        await wait_for_core(sender, timeout_s=EVENT_WAIT_S)

        first, second = asyncio.Event(), asyncio.Event()
        burst = asyncio.create_task(
            submit_all(sender, SUBMISSIONS, ROUTE, in_flight=16, marks=((50, first), (120, second)))
        )
        await asyncio.wait_for(first.wait(), EVENT_WAIT_S)
        jobs_leader = await asyncio.to_thread(cluster.leader, subjects.JOBS)
        cluster.kill(jobs_leader)
        await asyncio.wait_for(second.wait(), EVENT_WAIT_S)
        cluster.restart(jobs_leader)
        events_leader = await asyncio.to_thread(cluster.leader, subjects.EVENTS)
        cluster.kill(events_leader)
        outcomes = await asyncio.wait_for(burst, EVENT_WAIT_S)
        cluster.restart(events_leader)
        accepted = [o for o in outcomes if o.accepted]
        run_ids = set().union(*(o.run_ids for o in accepted))
        replies = await final_replies(observer, ROUTE, run_ids, timeout_s=EVENT_WAIT_S, quiet_s=5)
        api_url = (home / "run" / "api.url").read_text().strip()
        async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
            boards = await http.get("/v1/leaderboards")  # the API answers through the cluster after both failovers
        for name in {jobs_leader, events_leader}:
            await caught_up(cluster, name, (subjects.JOBS, subjects.EVENTS, subjects.REPLIES))
    finally:
        for process in processes:
            process.stop()
        for bus in (sender, observer):
            if bus is not None:
                await bus.close()
        cluster.stop()

    assert boards.status_code == 200 and "vectoradd" in boards.text
    database = home / "kernelrank.duckdb"
    stored, commands = stored_runs(database), stored_commands(database)
    evaluations = sum((evaluations_in(tmp_path / f"{name}.evaluations") for name in WORKERS), collections.Counter())
    assert len(outcomes) == SUBMISSIONS and all(o.reply is not None or o.error for o in outcomes)
    assert max(commands.values()) == 1  # no submission stored twice
    for outcome in accepted:
        assert commands[outcome.command_id] == 1
        for run in outcome.run_ids:
            assert (stored[run].state, stored[run].status) == ("done", "passed"), run
            assert evaluations[run] >= 1 and replies[run] == 1, run
    for outcome in (o for o in outcomes if not o.accepted):
        runs = [run for run, facts in stored.items() if facts.command_id == outcome.command_id]
        assert all(stored[run].worker == NOT_QUEUED and not evaluations[run] for run in runs), outcome
    assert len(accepted) >= SUBMISSIONS // 2  # the cluster kept accepting through both failovers
