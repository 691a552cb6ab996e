"""Which workers' reports count: signed for their run by the worker they name, and from the worker that has the run.

A report (progress or result) reaches the core on its worker's own subject (``runs.result.<worker>.<run>``),
which NATS lets only that worker's user publish on, and the bus has already dropped any whose body names
another worker (``core.contracts.subjects.publisher``). Here it must also:

- be signed with the key of the attempt it names (``core.contracts.signing.attempt_key``, which the core handed
  only to the worker it granted that attempt, ``core.service.dispatch``) bound to that worker's key
  (``signing.report_key``; on an open bus, where workers have no key, the attempt key alone);
- belong to the run's latest delivery that started (an older delivery's reports are stale);
- for a result, come from the worker that started that delivery: the pairing the run book keeps from the
  workers' ``started`` events (the database records it too, ``mark_running``). Where this core has not seen
  that start yet (its progress consumer lags, or it restarted), EVENTS is asked for the worker's own start.

A worker the registry (``Registry``) has revoked counts for nothing: its reports are dropped, logged once per
worker. An embedded nats-server refuses a revoked worker anyway, but a NATS of one's own (an operator-mode
server, whose users the operator's tooling keeps) may still let it in.

Everything dropped is logged with the run and the worker it names; a dropped result ranks nothing.
Pool status counts only for the pools a worker was issued for (``IssuedPools``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from core.contracts import issued_workers, signing
from core.contracts.bus import Bus
from core.contracts.issued_workers import IssuedWorker
from core.contracts.messages import PoolStatus, RunProgress, RunResult
from core.service.runs import RunBook

log = logging.getLogger("core.service.loop")  # one log for everything the core drops


class Registry:
    """The issued workers (``core.contracts.issued_workers``), read again whenever the registry file changes, so
    ``kernelrank workers add`` and ``revoke`` take effect at once; ``None`` where this host has no registry (an
    open bus, or a core away from ``<home>/secrets``)."""

    def __init__(self, secrets_dir: Path) -> None:
        self._secrets_dir, self._file = secrets_dir, secrets_dir / issued_workers.REGISTRY
        self._seen: tuple[int, int] | None = None
        self._workers: dict[str, IssuedWorker] | None = None

    def workers(self) -> dict[str, IssuedWorker] | None:
        try:
            found = self._file.stat()
        except OSError:
            return None
        changed = (found.st_ino, found.st_mtime_ns)  # rewritten by os.replace: a new inode each time
        if changed != self._seen:
            self._workers, self._seen = issued_workers.load(self._secrets_dir), changed
        return self._workers


class ReportCheck:
    """Decides whether a worker's progress event or result counts; ``worker_keys`` on an authenticated bus, where
    ``registry`` (when given) also drops revoked workers' reports."""

    def __init__(
        self, secret: bytes, runs: RunBook, bus: Bus, *, worker_keys: bool, registry: Registry | None = None
    ) -> None:
        self._secret, self._runs, self._bus, self._worker_keys = secret, runs, bus, worker_keys
        self._registry = registry if worker_keys else None
        self._told_revoked: set[str] = set()

    def key(self, run_id: str, worker: str, attempt: int) -> str:
        """The key ``worker``'s reports for attempt ``attempt`` of ``run_id`` are signed with."""
        attempt_key = signing.attempt_key(signing.run_key(self._secret, run_id), attempt)
        return signing.report_key(attempt_key, signing.worker_key(self._secret, worker) if self._worker_keys else "")

    def signed(self, report: RunResult | RunProgress, kind: str) -> bool:
        if self._revoked(report.worker):
            return False
        if signing.verify(report, self.key(report.run_id, report.worker, _attempt(report))):
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
                and signing.verify(event, self.key(result.run_id, result.worker, event.attempt))
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
        """Whether EVENTS holds a signed result for the run (the newest one any worker stored) of its latest attempt:
        one of an overtaken attempt was dropped (``_stale``), so the run still needs one."""
        stored = await self._bus.last_result(run_id)
        return (
            stored is not None
            and stored.attempts >= self._runs.latest_attempt(run_id)
            and not self._revoked(stored.worker)
            and signing.verify(stored, self.key(run_id, stored.worker, stored.attempts))
        )

    def _revoked(self, worker: str) -> bool:
        """Whether the registry has revoked ``worker`` (said in the log the first time)."""
        workers = self._registry.workers() if self._registry else None
        known = workers.get(worker) if workers else None
        if known is None or known.live:
            return False
        if worker not in self._told_revoked:
            self._told_revoked.add(worker)
            log.warning(
                "dropping every report from worker %r: it was revoked on %s (said once per worker)",
                worker,
                known.revoked_at,
            )
        return True

    def _stale(self, report: RunResult | RunProgress, attempt: int, kind: str) -> bool:
        latest = self._runs.latest_attempt(report.run_id)
        if attempt >= latest:
            return False
        log.warning(
            "dropped a %s of attempt %d of run %s: attempt %d has started since", kind, attempt, report.run_id, latest
        )
        return True


def _attempt(report: RunResult | RunProgress) -> int:
    return report.attempts if isinstance(report, RunResult) else report.attempt


class IssuedPools:
    """Keeps the workers' pool status only for pools each worker was issued for (``core.contracts.issued_workers``).

    Without a registry (an open bus, or a NATS whose users are configured by hand) the server's permissions are
    the only check.
    """

    def __init__(self, registry: Registry, record: Callable, *, enforce: bool) -> None:
        self._registry, self._record, self._enforce = registry, record, enforce

    async def record(self, status: PoolStatus) -> None:
        workers = self._registry.workers() if self._enforce else None
        if workers is not None:
            issued = workers.get(status.worker)
            if issued is None or not issued.live or status.gpu not in issued.pools:
                log.warning(
                    "ignored pool status for %s from worker %r, which is not issued for it", status.gpu, status.worker
                )
                return
        await self._record(status)
