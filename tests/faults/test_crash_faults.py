"""SIGKILL, in turn, the core, a worker, the nats-server and the Slack adapter with 100 submissions in flight.

Every process is a real one (``kernelrank core``, two workers with a fake runner that writes down what it
evaluates, ``kernelrank slack`` in HTTP mode against the loopback fake Slack), and NATS restarts on its
store. Every submission must reach exactly one terminal result, stored once and posted once in its Slack
thread. With the core or the adapter killed, each run is also evaluated once. A killed worker's runs are
evaluated again (that is what redelivery is for), and so may be a few runs that were running when NATS was
killed: JetStream forgets deliveries it had not yet written to disk and hands those jobs out again while
their first worker is still on them (a job whose result is already stored is acknowledged unrun).

Replies the killed Slack adapter had taken but not posted come back after its consumer's ack_wait (120 s,
set in adapters/slack/run.py), so that case can take two minutes more.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from fault_kit import (
    KERNEL,
    NatsProcess,
    ServiceProcess,
    core_process,
    evaluations_in,
    free_port,
    service_env,
    stored_runs,
    wait_for_core,
    worker_process,
)

from core.contracts.bus import Bus
from core.contracts.commands import submit_command
from core.contracts.messages import Actor, Platform, ReplyTo, Tone
from tests.fakes.slack import FakeSlack

SUBMISSIONS = 100
CHANNEL = "C0GENERAL"
SETTLE_S = 6.0  # quiet time after the last report, for a duplicate to show up


def thread(index: int) -> str:
    return f"1700000000.{index:06d}"


def reports(fake: FakeSlack) -> dict[str, int]:
    """Final reports posted per thread (progress lines and the acceptance are not reports)."""
    counts: dict[str, int] = {}
    for call in fake.calls_to("chat.postMessage", channel=CHANNEL):
        text = call.params.get("text", "")
        if "Submission #" in text and "queued" not in text:
            counts[call.params.get("thread_ts")] = counts.get(call.params.get("thread_ts"), 0) + 1
    return counts


class System:
    def __init__(self, tmp_path: Path, problems: Path, fake: FakeSlack) -> None:
        self.nats = NatsProcess(tmp_path / "nats")
        self.url = self.nats.start()
        self.home, self.evaluations = tmp_path / "var", tmp_path / "evaluations"
        env = service_env(self.url, self.home, problems, slack_api_url=fake.api_url)
        env.update(SLACK_BOT_TOKEN=fake.bot_token, SLACK_SIGNING_SECRET="fault-suite-secret")
        logs = tmp_path / "logs"
        logs.mkdir()
        self.core = core_process(env, logs / "core.log")
        self.workers = [
            worker_process(env, logs / f"worker{i}.log", self.evaluations, delay_s=0.5, concurrency=4) for i in range(2)
        ]
        self.slack = (
            ServiceProcess(  # its port is picked, freed and taken: `kernelrank slack` reads port 0 as Socket Mode
                [sys.executable, "-m", "core.launch.main", "slack", "--http", "--port", str(free_port())],
                env,
                logs / "slack.log",
            )
        )
        for process in (self.core, *self.workers, self.slack):
            process.start()

    def kill_and_restart(self, victim: str) -> float:
        """SIGKILL the victim; return how long to wait before starting it again."""
        if victim == "nats":
            self.nats.kill()
        else:
            {"core": self.core, "worker": self.workers[0], "slack": self.slack}[victim].kill()
        return 1.0

    def restart(self, victim: str) -> None:
        if victim == "nats":
            self.nats.start()
        else:
            {"core": self.core, "worker": self.workers[0], "slack": self.slack}[victim].start()

    def stop(self) -> None:
        for process in (self.slack, *self.workers, self.core):
            process.stop()
        self.nats.stop()


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["core", "worker", "nats", "slack"])
async def test_a_sigkill_with_100_submissions_in_flight_loses_and_doubles_nothing(victim, tmp_path, problems):
    with FakeSlack() as fake:
        system = System(tmp_path, problems, fake)
        bus = await Bus.connect(system.url, name="crash-test")
        try:
            await wait_for_core(bus)
            accepted = await asyncio.gather(
                *(
                    bus.request(
                        submit_command(
                            Actor(Platform.SLACK, f"U0USER{i % 10}", display_name=f"User {i % 10}"),
                            ReplyTo(Platform.SLACK, channel=CHANNEL, thread=thread(i), user=f"U0USER{i % 10}"),
                            "k.py",
                            KERNEL + f"# variant {i}\n".encode(),
                            leaderboard="vectoradd",
                            mode="test",
                        ),
                        timeout_s=30,
                    )
                    for i in range(SUBMISSIONS)
                )
            )
            assert all(reply.tone is not Tone.ERROR for reply in accepted)
            run_ids = {run["run_id"] for reply in accepted for run in reply.data["runs"]}
            await asyncio.sleep(1.5)  # a few runs done, most queued or running
            assert len(evaluations_in(system.evaluations)) < SUBMISSIONS
            await asyncio.sleep(system.kill_and_restart(victim))
            system.restart(victim)
            await _until_reported(fake, timeout_s=200)
        finally:
            await bus.close()
            system.stop()
        posted = reports(fake)

    assert {thread(i): 1 for i in range(SUBMISSIONS)} == posted
    stored = stored_runs(system.home / "kernelrank.duckdb")
    assert {(stored[run].state, stored[run].status) for run in run_ids} == {("done", "passed")}
    evaluated = evaluations_in(system.evaluations)
    assert set(evaluated) == run_ids
    if victim in ("core", "slack"):
        assert max(evaluated.values()) == 1


async def _until_reported(fake: FakeSlack, timeout_s: float) -> None:
    """Wait until every thread has a report, then SETTLE_S more without a new one."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while len(reports(fake)) < SUBMISSIONS:
        if loop.time() > deadline:
            raise AssertionError(f"only {len(reports(fake))} of {SUBMISSIONS} reports were posted")
        await asyncio.sleep(0.2)
    await asyncio.sleep(SETTLE_S)
