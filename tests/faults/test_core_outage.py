"""A core down for longer than the queue's duplicate window (120 s) while 100 runs are in flight.

Workers finish and report the jobs they hold while the core is away (new jobs come from the core, which hands
each to one worker: ``core.service.dispatch``), and their acknowledgements, which go through the core, are lost;
when it comes back, every run must be evaluated once and replied to once. Before the fix, the core re-queued
runs before reading the results that piled up, and took runs whose "running" mark it had not written yet for
queued ones: 98 of 100 runs were evaluated twice. ``KERNELRANK_FAULT_OUTAGE_S`` shortens the outage for a quick
local look (below 120 s the duplicate window hides the fault)."""

from __future__ import annotations

import asyncio
import os

import pytest
from fault_kit import CountingRunner, core_process, final_replies, service_env, stored_runs, submit_all, wait_for_core
from worker_testkit import running

from core.contracts.bus import Bus
from runners.worker import Worker

RUNS = 100
OUTAGE_S = float(os.environ.get("KERNELRANK_FAULT_OUTAGE_S", "180"))
ROUTE = "outage"


@pytest.mark.slow
async def test_a_three_minute_core_outage_evaluates_and_replies_once(nats_url, tmp_path, problems):
    env = service_env(nats_url, tmp_path / "var", problems)
    core = core_process(env, tmp_path / "core.log").start()
    bus = await Bus.connect(nats_url, name="outage-test")
    runner = CountingRunner(delay_s=0.3)
    try:
        await wait_for_core(bus)
        async with running(Worker(bus, "CPU", runner, concurrency=4, poll_s=0.2)):
            outcomes = await submit_all(bus, RUNS, ROUTE)
            assert all(o.accepted for o in outcomes), [o.error or o.reply for o in outcomes if not o.accepted][:3]
            run_ids = set().union(*(o.run_ids for o in outcomes))
            core.kill()
            await asyncio.sleep(OUTAGE_S)
            assert sum(runner.evaluations.values()) < RUNS  # no job is handed out while the core is away
            core.start()
            await wait_for_core(bus)
            replies = await final_replies(bus, ROUTE, run_ids, quiet_s=2 * 4 + 2)  # two ack_waits and then some
    finally:
        core.stop()
        await bus.close()
    assert {run for run, n in runner.evaluations.items() if n != 1} == set()
    assert {run for run in run_ids if replies[run] != 1} == set()
    stored = stored_runs(tmp_path / "var" / "kernelrank.duckdb")
    assert {(stored[run].state, stored[run].status) for run in run_ids} == {("done", "passed")}
