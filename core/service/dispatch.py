"""The core hands each job to one worker at a time: a job belongs to the worker that holds its attempt.

Workers cannot read the job queues (``core.contracts.roles``); they ask the core (``core.contracts.bus._work``).
For each request the core pulls deliveries from the pool's durable (as many as the worker has room for and are
waiting, else the next one) and hands them to the asking worker alone, on that worker's own inbox, each with:

- the attempt: JetStream's count of the message's deliveries, read by the core, never the worker's word (or one
  more than the last attempt this core handed out, where JetStream lost count: a nats-server killed before it
  wrote a delivery down hands the job out again as delivery 1);
- the attempt's result key (``signing.attempt_key``): reports signed with it, bound to the worker's own key,
  count for this attempt and this worker only, so a worker that held an earlier attempt cannot claim a later one;
- a grant (``signing.grant``) the worker shows to acknowledge, give back or heartbeat that delivery: the core
  settles a delivery only for the worker it was handed to, and never for an attempt another has overtaken.

A new attempt exists only when JetStream redelivers, which it does only once the holder has stopped heartbeating
for ``ack_wait`` (it died) or gave the job back itself: nobody else can settle a delivery. A job whose result is
already stored (its worker's acknowledgement was lost) is acknowledged here and never handed out again; a
delivery that cannot be a redelivery (JetStream counts it the first, and this core waits for the run and has
handed out no attempt of it) is not looked up, which saves a round trip to the server per job. Grants are
keyed by the core's secret, not kept in memory, so a restarted core (or another replica) honours them.
"""

from __future__ import annotations

import hmac
import logging

from core.contracts import signing
from core.contracts.bus import Bus, Held, Refused, Running, Settle
from core.service.runs import RunBook
from core.service.worker_reports import ReportCheck

log = logging.getLogger(__name__)


class Dispatcher:
    """Serves workers' requests for jobs of ``pools`` (``start``)."""

    def __init__(self, bus: Bus, secret: bytes, runs: RunBook, checks: ReportCheck) -> None:
        self._bus, self._secret, self._runs, self._checks = bus, secret, runs, checks
        self._queues: dict[str, tuple[float, int]] = {}

    async def start(self, pools: list[str]) -> Running:
        for gpu in pools:
            self._queues[gpu] = await self._bus.queue_config(gpu)
        return await self._bus.serve_work(pools, self._queues.__getitem__, self.next_jobs, self.settle)

    async def next_jobs(self, worker: str, gpu: str, wait_s: float, limit: int) -> list[Held]:
        """Up to ``limit`` of the pool's jobs for ``worker``, each with its attempt's key and grant; none when
        none came within ``wait_s``."""
        return [held for held in await self._bus.pull_jobs(gpu, wait_s, limit) if await self._hand(worker, held)]

    async def _hand(self, worker: str, held: Held) -> bool:
        """Make ``held`` ``worker``'s attempt; False (and acknowledged) when its result is stored already."""
        run_id = held.job.run_id
        first = held.attempt == 1 and run_id in self._runs.in_flight and self._runs.started_by(run_id) is None
        if not first and await self._checks.has_result(run_id):
            log.warning("run %s was delivered again after its result was stored; not evaluating it twice", run_id)
            await self._bus.settle_delivery(held.ack, "ack")
            return False
        held.attempt = max(held.attempt, self._runs.latest_attempt(run_id) + 1)
        self._runs.attempt_started(run_id, held.attempt, worker)
        held.job.result_key = signing.attempt_key(signing.run_key(self._secret, run_id), held.attempt)
        held.grant = signing.grant(self._secret, worker, run_id, held.attempt, held.ack)
        log.info("run %s: attempt %d handed to worker %s", run_id, held.attempt, worker)
        return True

    async def settle(self, worker: str, gpu: str, settle: Settle) -> None:
        """Do what ``worker`` asks with a delivery, if it holds it; ``Refused`` otherwise."""
        expected = signing.grant(self._secret, worker, settle.run_id, settle.attempt, settle.ack)
        if not hmac.compare_digest(settle.grant, expected):
            log.warning(
                "refused worker %r's %s of run %s attempt %d (%s): it was not handed that delivery",
                worker,
                settle.op,
                settle.run_id,
                settle.attempt,
                gpu,
            )
            raise Refused("this worker was not handed that job, so it cannot settle it.")
        latest = self._runs.latest_attempt(settle.run_id)
        if latest > settle.attempt:
            log.warning(
                "refused worker %r's %s of run %s: its attempt %d was overtaken by attempt %d",
                worker,
                settle.op,
                settle.run_id,
                settle.attempt,
                latest,
            )
            raise Refused(f"attempt {settle.attempt} of this job was handed to another worker since; drop it.")
        await self._bus.settle_delivery(settle.ack, settle.op, settle.delay_s)
