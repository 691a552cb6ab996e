"""What a core re-queues when it starts: the runs JetStream never held, and nothing else."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from fault_kit import CountingRunner

from core.contracts import subjects
from core.contracts.messages import new_id
from core.service.bootstrap import bootstrap
from storage.records import NewSubmission

CORRECT = (Path(__file__).parents[1] / "fixtures" / "harness" / "submissions" / "correct.py").read_text()


async def jobs_stored(system) -> int:
    return (await system.bus._js.stream_info(subjects.JOBS)).state.messages


async def restart_core(system) -> list[str]:
    """Stop the core and start a new one on the same database and bus, as a restart would; return the run ids
    of the jobs it published (the stream's 2-minute duplicate window would hide a job published twice)."""
    await system.service.stop()
    published: list[str] = []
    publish = system.bus.publish_job

    async def recording(job):
        published.append(job.run_id)
        return await publish(job)

    system.bus.publish_job = recording
    try:
        system.service = bootstrap(system.bus, system.service.db, system.settings, ["CPU"])
        await system.service.start()
    finally:
        system.bus.publish_job = publish
    return published


class QuickThenSlow(CountingRunner):
    """Answers at once for a source marked ``# quick``, after a minute otherwise."""

    async def run(self, job, on_progress=None):
        self.delay_s = 0 if "# quick" in job.submission_source else 60
        return await super().run(job, on_progress)


async def test_a_restart_requeues_only_runs_that_were_stored_but_never_queued(make_system):
    runner = QuickThenSlow()
    system = await make_system(runner)
    quick = set()
    for index in range(2):  # done: their jobs are gone from the queue
        accepted = await system.submit(f"early{index}", CORRECT + f"# quick {index}\n", leaderboard="vectoradd")
        quick |= {run["run_id"] for run in accepted.data["runs"]}
    await system.finals(quick)
    for index in range(5):  # two held by the worker, three waiting
        await system.submit(f"user{index}", CORRECT + f"# {index}\n", leaderboard="vectoradd")
    while len(runner.evaluations) < 4:
        await asyncio.sleep(0.05)
    never_queued = new_id()  # a crash between storing and queueing left this one
    person = system.store.person("cli", "zed", "Zed")
    system.store.add_submissions(
        [
            NewSubmission(
                command_id=new_id(),
                person_id=person,
                leaderboard="vectoradd",
                file_name="k.py",
                source=CORRECT,
                mode="test",
                runs=[(never_queued, "CPU")],
                reply_to={"platform": "discord", "channel": system.route},
                created_at=datetime.now(UTC),
            )
        ]
    )
    assert await jobs_stored(system) == 5

    assert await restart_core(system) == [never_queued]
    assert await jobs_stored(system) == 6 and len(system.service.runs.in_flight) == 6
    assert await restart_core(system) == []  # a second start adds nothing
    assert set(runner.evaluations.values()) == {1}
