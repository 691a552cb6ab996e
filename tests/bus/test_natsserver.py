import json
import urllib.request
from pathlib import Path

import pytest
from worker_testkit import hand_out_jobs

from core.contracts.bus import Bus, BusUnavailable
from core.contracts.messages import RunJob
from core.launch.natsserver import EmbeddedNats, NatsServerError


def monitoring_url(run_dir: Path) -> str:
    (ports_file,) = run_dir.glob("nats-server_*.ports")
    return json.loads(ports_file.read_text())["monitoring"][0]


def test_start_is_ready_and_stop_ends_the_process(tmp_path: Path) -> None:
    server = EmbeddedNats()
    url = server.start(tmp_path / "run", tmp_path / "store")
    assert url.startswith("nats://127.0.0.1:")
    health = monitoring_url(tmp_path / "run") + "/healthz?js-enabled-only=true"
    with urllib.request.urlopen(health) as response:
        assert response.status == 200
    server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(health, timeout=2)
    with pytest.raises(NatsServerError):
        _ = server.url
    server.stop()  # a second stop is harmless


async def test_clients_get_a_clear_error_once_it_stopped(tmp_path: Path) -> None:
    with EmbeddedNats() as server:
        url = server.start(tmp_path / "run", tmp_path / "store")
    with pytest.raises(BusUnavailable, match="kernelrank up"):
        await Bus.connect(url, name="late")


def test_a_store_path_that_is_a_file_is_reported(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.write_text("a file where the store directory should be")
    with pytest.raises(NatsServerError, match="KERNELRANK_HOME"):
        EmbeddedNats().start(tmp_path / "run", store)


def test_a_server_that_cannot_start_is_reported_with_its_log(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "jetstream").write_text("a file where the server wants its JetStream folder")
    with pytest.raises(NatsServerError, match="its log says"):
        EmbeddedNats().start(tmp_path / "run", store)


async def test_restart_on_the_same_store_keeps_a_queued_job(tmp_path: Path, make_job) -> None:
    run_dir, store = tmp_path / "run", tmp_path / "store"
    job = make_job()
    with EmbeddedNats() as server:
        bus = await Bus.connect(server.start(run_dir, store), name="before")
        await bus.ensure_streams(["CPU"])
        assert await bus.publish_job(job)
        await bus.close()

    with EmbeddedNats() as server:
        bus = await Bus.connect(server.start(run_dir, store), name="after")
        try:
            await hand_out_jobs(bus, ["CPU"])
            queue = await bus.jobs("CPU")  # the pool's consumer survived too
            (delivery,) = await queue.fetch(timeout_s=5)
            assert isinstance(delivery.message, RunJob)
            assert delivery.message.run_id == job.run_id
            await delivery.ack()
            await queue.close()
        finally:
            await bus.close()
