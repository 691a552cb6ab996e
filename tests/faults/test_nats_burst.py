"""NATS killed (SIGKILL) in the middle of a burst of submissions, then started again on the same store.

Every sender's answer must match what was stored: accepted means stored, evaluated and answered once (a job
running when NATS died may be evaluated twice: see test_crash_faults.py); refused (or no answer) means
nothing stored, or stored and withdrawn, never evaluated. Before the fix, 14 of
100 submissions were stored and evaluated while their senders were told they failed, and 84 senders were
told "kernelrank is not running" while the core was up (no responders right after the reconnect).
"""

from __future__ import annotations

import asyncio

import pytest
from fault_kit import (
    CountingRunner,
    NatsProcess,
    core_process,
    final_replies,
    service_env,
    stored_commands,
    stored_runs,
    submit_all,
    wait_for_core,
)
from worker_testkit import running

from core.contracts.bus import Bus
from core.service.acceptance import NOT_QUEUED
from runners.worker import Worker

SUBMISSIONS = 100
ROUTE = "burst"


@pytest.mark.slow
async def test_every_sender_is_told_what_was_stored_when_nats_dies_mid_burst(tmp_path, problems):
    nats = NatsProcess(tmp_path / "nats")
    url = nats.start()
    core = core_process(service_env(url, tmp_path / "var", problems), tmp_path / "core.log").start()
    bus = await Bus.connect(url, name="burst-senders")
    worker_bus = await Bus.connect(url, name="burst-worker")
    runner = CountingRunner(delay_s=0.1)
    try:
        await wait_for_core(bus)
        async with running(Worker(worker_bus, "CPU", runner, concurrency=4, poll_s=0.2)):
            midway = asyncio.Event()
            burst = asyncio.create_task(submit_all(bus, SUBMISSIONS, ROUTE, in_flight=16, started=midway))
            await asyncio.wait_for(midway.wait(), 60)
            nats.kill()
            await asyncio.sleep(1.5)
            nats.start()
            outcomes = await asyncio.wait_for(burst, 120)
            accepted = [o for o in outcomes if o.accepted]
            run_ids = set().union(*(o.run_ids for o in accepted))
            replies = await final_replies(bus, ROUTE, run_ids, quiet_s=6)
    finally:
        core.stop()
        await bus.close()
        await worker_bus.close()
        nats.stop()

    assert not [o.error for o in outcomes if "not running" in o.error]  # the core was up all along
    stored, commands = (
        stored_runs(tmp_path / "var" / "kernelrank.duckdb"),
        stored_commands(tmp_path / "var" / "kernelrank.duckdb"),
    )
    assert max(commands.values()) == 1
    for outcome in accepted:
        assert commands[outcome.command_id] == 1
        for run in outcome.run_ids:
            assert (stored[run].state, stored[run].status) == ("done", "passed")
            assert runner.evaluations[run] >= 1 and replies[run] == 1, run
    refused = [o for o in outcomes if not o.accepted]
    for outcome in refused:
        runs = [run for run, facts in stored.items() if facts.command_id == outcome.command_id]
        assert all(stored[run].worker == NOT_QUEUED and not runner.evaluations[run] for run in runs), outcome
    assert len(accepted) + len(refused) == SUBMISSIONS and len(accepted) >= SUBMISSIONS // 3
