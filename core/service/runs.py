"""The core's one record of the runs it is waiting on, between queueing and their result.

The database holds every run for good; this is what the core must answer from memory, fast and without a
query: which runs have no result yet (``in_flight``, with the jobs ahead of a new one per GPU pool), which of
them a worker has started (before the database knows), which delivery of a run is the latest one the core handed
out or saw start and which worker holds it (an older delivery's reports are stale, another worker's are not the
run's, ``core.service.dispatch`` settles nothing for them), and which runs finished lately (progress can trail a
result).
Handlers and the service loop share one ``RunBook``; nothing else keeps run state.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable

from storage.records import RunInfo

FINISHED_MEMORY = 10_000  # recently finished run ids kept to drop progress that arrives after the result
ATTEMPTS_MEMORY = 100_000  # runs whose latest started delivery is remembered (a run forgets it at its result)
# A waiting run hears every news while among the first NEWS_HEAD of its pool, further back once it moved up a
# NEWS_SHARE-th of the places it last heard: a start costs some 5 ln(queue) replies, not one per waiting run.
NEWS_HEAD = 10
NEWS_SHARE = 5
# A pool's waiting runs hear news at most once in NEWS_EVERY_S: news that comes sooner is held back and told when
# that time has passed (``held_pools``), so a burst of starts on a fast pool costs a reply a second per waiting run
# that hears, not one per start, and one pass over the queue a second.
NEWS_EVERY_S = 1.0


class InFlight(dict[str, RunInfo]):
    """Run id -> run, for runs without a result yet, in the order they were queued; counts runs per pool.

    Only item assignment, ``del`` and ``pop`` change it (the core uses nothing else), and each keeps the counts.
    """

    def __init__(self) -> None:
        super().__init__()
        self._per_gpu: Counter[str] = Counter()

    def __setitem__(self, run_id: str, run: RunInfo) -> None:
        old = self.get(run_id)
        if old is not None:
            self._per_gpu[old.gpu] -= 1
        self._per_gpu[run.gpu] += 1
        super().__setitem__(run_id, run)

    def __delitem__(self, run_id: str) -> None:
        self._per_gpu[self[run_id].gpu] -= 1
        super().__delitem__(run_id)

    def pop(self, run_id: str, *default: RunInfo | None) -> RunInfo | None:  # type: ignore[override]
        if run_id in self:
            self._per_gpu[self[run_id].gpu] -= 1
        return super().pop(run_id, *default)

    def ahead_of(self, run_id: str, gpu: str) -> int:
        """How many runs on ``gpu`` without a result were queued before ``run_id`` (all of them for a new run)."""
        if run_id not in self:
            return self._per_gpu[gpu]
        ahead = 0
        for other, run in self.items():  # a repeated command: rare, so a scan is fine
            if other == run_id:
                break
            ahead += run.gpu == gpu
        return ahead


class RunBook:
    """Runs without a result, the started ones among them, their latest deliveries and the recently finished."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.in_flight = InFlight()
        self.started: set[str] = set()
        self._clock = clock
        self._started_at: dict[str, float] = {}  # run id -> when this core saw it start
        self.typical_s: dict[str, float] = {}  # GPU pool -> how long a run there lasts, from the runs seen whole
        self._finished: OrderedDict[str, None] = OrderedDict()
        # run id -> (the latest delivery that started, the worker that started it)
        self._attempts: OrderedDict[str, tuple[int, str]] = OrderedDict()
        self._told: dict[str, int] = {}  # waiting run id -> the runs ahead of it when its author last heard
        self._news_at: dict[str, float] = {}  # GPU pool -> when its waiting runs last heard news
        self._held: set[str] = set()  # GPU pools whose latest news was held back (NEWS_EVERY_S)

    def waiting_for(self, run: RunInfo) -> None:
        """A run queued now, or found unfinished when the core started."""
        self.in_flight[run.run_id] = run
        if run.state == "running":
            self.started.add(run.run_id)

    def latest_attempt(self, run_id: str) -> int:
        return self._attempts.get(run_id, (0, ""))[0]

    def started_by(self, run_id: str) -> tuple[int, str] | None:
        """(latest delivery handed out or started, the worker holding it), where this core has seen either."""
        return self._attempts.get(run_id)

    def attempt_started(self, run_id: str, attempt: int, worker: str = "") -> None:
        if run_id not in self._finished and attempt > self.latest_attempt(run_id):
            self._attempts[run_id] = (attempt, worker)
        while len(self._attempts) > ATTEMPTS_MEMORY:
            self._attempts.popitem(last=False)

    def mark_started(self, run_ids: set[str]) -> None:
        """Runs a worker has started: they no longer wait, and their length is measured from now."""
        self.started |= run_ids
        for run_id in run_ids:
            self._started_at.setdefault(run_id, self._clock())
            self._told.pop(run_id, None)

    def result_arrived(self, run_id: str) -> RunInfo | None:
        """The run's record, no longer waited on; None when this core was not waiting for it."""
        self._attempts.pop(run_id, None)
        self.started.discard(run_id)
        self._told.pop(run_id, None)
        began = self._started_at.pop(run_id, None)
        run = self.in_flight.pop(run_id, None)
        if run is not None and began is not None:  # a moving average: the pool's recent runs count most
            took, before = self._clock() - began, self.typical_s.get(run.gpu)
            self.typical_s[run.gpu] = took if before is None else 0.7 * before + 0.3 * took
        return run

    def wait_estimate(self, gpu: str) -> Callable[[int], float | None]:
        """Roughly how long until a run with ``ahead`` unfinished runs before it on ``gpu`` starts (None before
        any run there was seen whole). The runs running now count as the pool's width; they are read once here,
        so estimating every waiting run of a long queue costs one pass, not one per run."""
        typical = self.typical_s.get(gpu)
        if typical is None:
            return lambda ahead: None
        now = self._clock()
        running = [
            self._started_at.get(r.run_id, now)
            for r in self.in_flight.values()
            if r.gpu == gpu and r.run_id in self.started
        ]
        width = max(1, len(running))
        first_free = min((max(0.0, typical - (now - began)) for began in running), default=0.0)
        return lambda ahead: first_free + max(0, ahead - len(running)) * typical / width

    def worth_telling(self, run_id: str, ahead: int) -> bool:
        """Whether a waiting run's author should hear that ``ahead`` runs are before it now (and it is noted)."""
        told = self._told.get(run_id)
        if ahead >= NEWS_HEAD and told is not None and told - ahead < told // NEWS_SHARE:
            return False
        self._told[run_id] = ahead
        return True

    def news_due(self, gpus: Iterable[str]) -> set[str]:
        """The pools among ``gpus`` whose waiting runs may hear news now (noted as told); the others' news is held
        back for ``held_pools``."""
        now, wanted = self._clock(), set(gpus)
        due = {gpu for gpu in wanted if gpu not in self._news_at or now - self._news_at[gpu] >= NEWS_EVERY_S}
        self._held = (self._held | wanted) - due
        self._news_at.update(dict.fromkeys(due, now))
        return due

    def held_pools(self) -> set[str]:
        """The pools whose latest news was held back, forgotten here: their next news tells it (or holds it back
        again)."""
        held, self._held = self._held, set()
        return held

    def answered(self, run_ids: list[str]) -> None:
        for run_id in run_ids:
            self._finished[run_id] = None
        while len(self._finished) > FINISHED_MEMORY:
            self._finished.popitem(last=False)

    def finished(self, run_id: str) -> bool:
        return run_id in self._finished
