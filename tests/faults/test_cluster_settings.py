"""The cluster's settings, on real nats-servers: a URL list whose first node is dead, a replica count a server cannot
keep, and a core start that moves the streams and buckets it finds to the replica count asked for."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from cluster_kit import NatsCluster, free_ports
from fault_kit import REPO, NatsProcess, service_env

from core.contracts import subjects
from core.contracts.bus import Bus, BusError
from core.contracts.bus._streams import stream_configs
from core.contracts.credentials import read
from core.contracts.roles import CHAT_PLATFORMS, Role
from core.launch.cluster import write_accounts


async def test_a_url_list_whose_first_node_is_dead_connects_to_the_next(tmp_path, caplog):
    nats = NatsProcess(tmp_path / "nats")
    url = nats.start()
    (dead,) = free_ports(1)
    try:
        bus = await Bus.connect(f"nats://127.0.0.1:{dead}, {url}", "dead-first")
        await bus.close()
    finally:
        nats.stop()
    assert f"NATS at nats://127.0.0.1:{dead} did not answer" in caplog.text


async def test_more_replicas_than_the_server_can_keep_is_one_sentence_naming_the_setting(tmp_path):
    nats = NatsProcess(tmp_path / "nats")
    bus = await Bus.connect(nats.start(), "too-many-copies")
    try:
        with pytest.raises(BusError) as refused:
            await bus.ensure_streams(["CPU"], replicas=3)
    finally:
        await bus.close()
        nats.stop()
    message = str(refused.value)
    assert message.startswith("KERNELRANK_NATS_REPLICAS asks for 3 copies of stream JOBS")
    assert "set it to at most the number of JetStream servers" in message and message.count(". ") == 0


def test_a_core_started_with_more_replicas_than_nats_keeps_stops_with_that_sentence(tmp_path, problems):
    nats = NatsProcess(tmp_path / "nats")
    env = service_env(nats.start(), tmp_path / "var", problems, nats_replicas="3")
    try:
        core = subprocess.run(
            [sys.executable, "-m", "core.launch.main", "core"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        nats.stop()
    assert core.returncode == 1 and "Traceback" not in core.stderr
    assert core.stderr.splitlines()[-1].startswith("kernelrank: KERNELRANK_NATS_REPLICAS asks for 3 copies")


@pytest.mark.slow
async def test_a_core_start_moves_the_streams_and_buckets_it_finds_to_the_replica_count(tmp_path):
    secrets = tmp_path / "secrets"
    cluster = NatsCluster(tmp_path / "nats", write_accounts(secrets, tmp_path / "accounts.conf"))
    bus = None
    try:
        cluster.start()
        bus = await Bus.connect(cluster.urls, "kernelrank-core", read(secrets / "core.json", Role.CORE))
        await bus.ensure_streams(["CPU"])  # as an earlier version left them: one copy each
        before = {name: (await bus._js.stream_info(name)).config.num_replicas for name in _streams()}
        await bus.ensure_streams(["CPU"], replicas=3)
        after = {name: (await bus._js.stream_info(name)).config.num_replicas for name in _streams()}
        queue = subjects.runner_durable("CPU")
        for _ in range(600):  # the job queue's consumer follows its stream to three copies, shortly after
            if await asyncio.to_thread(cluster.consumer_copies, subjects.JOBS, queue) == 3:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"the consumer {queue} was not copied to the three nodes")
    finally:
        if bus is not None:
            await bus.close()
        cluster.stop()
    assert set(before.values()) == {1} and set(after.values()) == {3}


def _streams() -> list[str]:
    buckets = [subjects.RUNNER_CALLS, *(subjects.ledger_bucket(p.value) for p in CHAT_PLATFORMS)]
    return [config.name for config in stream_configs()] + [f"KV_{bucket}" for bucket in buckets]
