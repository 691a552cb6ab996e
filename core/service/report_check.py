"""Which workers' reports count: signed for their run by the worker they name, and from the worker that has the run.

A report (progress or result) reaches the core on its worker's own subject (``runs.result.<worker>.<run>``),
which NATS lets only that worker's user publish on, and the bus has already dropped any whose body names
another worker (``core.contracts.subjects.publisher``). Here it must also:

- be signed with the run's key bound to that worker's key (``core.contracts.signing.report_key``; on an open
  bus, where workers have no key, the run key alone);
- belong to the run's latest delivery that started (an older delivery's reports are stale);
- for a result, come from the worker that started that delivery: the pairing the run book keeps from the
  workers' ``started`` events (the database records it too, ``mark_running``). Where this core has not seen
  that start yet (its progress consumer lags, or it restarted), EVENTS is asked for the worker's own start.

Everything dropped is logged with the run and the worker it names; a dropped result ranks nothing.
Pool status counts only for the pools a worker was issued for (``IssuedPools``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from core.contracts import issued_workers, signing
from core.contracts.bus import Bus
from core.contracts.messages import PoolStatus, RunProgress, RunResult
from core.service.runs import RunBook

log = logging.getLogger("core.service.loop")  # one log for everything the core drops


class ReportCheck:
    """Decides whether a worker's progress event or result counts; ``worker_keys`` on an authenticated bus."""

    def __init__(self, secret: bytes, runs: RunBook, bus: Bus, *, worker_keys: bool) -> None:
        self._secret, self._runs, self._bus, self._worker_keys = secret, runs, bus, worker_keys

    def key(self, run_id: str, worker: str) -> str:
        """The key ``worker``'s reports for ``run_id`` are signed with."""
        run_key = signing.run_key(self._secret, run_id)
        return signing.report_key(run_key, signing.worker_key(self._secret, worker) if self._worker_keys else "")

    def signed(self, report: RunResult | RunProgress, kind: str) -> bool:
        if signing.verify(report, self.key(report.run_id, report.worker)):
            return True
        log.warning(
            "dropped a %s for run %s that is not signed with the run's key (it names worker %r)",
            kind,
            report.run_id,
            report.worker,
        )
        return False

    def progress_counts(self, event: RunProgress) -> bool:
        """Signed, of the latest delivery, and not a second start of that delivery by another worker."""
        if not self.signed(event, "progress event") or self._stale(event, event.attempt, "progress event"):
            return False
        started = self._runs.started_by(event.run_id)
        if started is not None and started[0] == event.attempt and started[1] != event.worker:
            log.warning(
                "dropped a progress event of run %s from worker %r: attempt %d was started by %r",
                event.run_id,
                event.worker,
                event.attempt,
                started[1],
            )
            return False
        return True

    async def result_counts(self, result: RunResult) -> bool:
        """Signed, of the latest delivery, and from the worker that started that delivery."""
        if not self.signed(result, "result") or self._stale(result, result.attempts, "result"):
            return False
        started = self._runs.started_by(result.run_id)
        if started is not None and started[0] == result.attempts:
            paired = started[1] == result.worker
        else:  # this core has not seen the start yet: the worker's own start must be in EVENTS
            event = await self._bus.last_progress(result.worker, result.run_id)
            paired = (
                event is not None
                and event.attempt == result.attempts
                and signing.verify(event, self.key(result.run_id, result.worker))
            )
        if not paired:
            log.warning(
                "dropped a result of run %s from worker %r: that worker did not start attempt %d of the run%s",
                result.run_id,
                result.worker,
                result.attempts,
                f" ({started[1]!r} did)" if started and started[0] == result.attempts else "",
            )
        return paired

    async def has_result(self, run_id: str) -> bool:
        """Whether EVENTS holds a signed result for the run (the newest one any worker stored)."""
        stored = await self._bus.last_result(run_id)
        return stored is not None and signing.verify(stored, self.key(run_id, stored.worker))

    def _stale(self, report: RunResult | RunProgress, attempt: int, kind: str) -> bool:
        latest = self._runs.latest_attempt(report.run_id)
        if attempt >= latest:
            return False
        log.warning(
            "dropped a %s of attempt %d of run %s: attempt %d has started since", kind, attempt, report.run_id, latest
        )
        return True


class IssuedPools:
    """Keeps the workers' pool status only for pools each worker was issued for (``core.contracts.issued_workers``).

    Read from the secrets folder again whenever the registry changes (``kernelrank workers add`` and ``revoke``
    take effect at once). Without a registry (an open bus, or a NATS whose users are configured by hand) the
    server's permissions are the only check.
    """

    def __init__(self, secrets_dir: Path, record: Callable, *, enforce: bool) -> None:
        self._registry = secrets_dir / issued_workers.REGISTRY
        self._secrets_dir, self._record, self._enforce = secrets_dir, record, enforce
        self._seen: float | None = None
        self._pools: dict[str, tuple[str, ...]] | None = None

    async def record(self, status: PoolStatus) -> None:
        pools = self._issued()
        if pools is not None and status.gpu not in pools.get(status.worker, ()):
            log.warning(
                "ignored pool status for %s from worker %r, which is not issued for it", status.gpu, status.worker
            )
            return
        await self._record(status)

    def _issued(self) -> dict[str, tuple[str, ...]] | None:
        if not self._enforce:
            return None
        try:
            changed = self._registry.stat().st_mtime
        except OSError:
            return None
        if changed != self._seen:
            self._pools, self._seen = issued_workers.live_pools(self._secrets_dir), changed
        return self._pools
