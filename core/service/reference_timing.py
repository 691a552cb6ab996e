"""The problem's reference timed by the judge on each GPU of its leaderboard, once per problem version and GPU, and
what rankings say with it: how many times faster than the reference a kernel is, and its share of the speed of light.

The reference's run is the reference as a submission (``validation.source``: ``reference.py`` with
``custom_kernel = ref_kernel``) in ranked mode, through the same queue, worker, harness and judge as every ranked
submission: the same timing method and the same ranking rule, with the leaderboard's secret seed. Its score is
stored per (leaderboard, version, GPU) (``Store.references``); a new version of the problem has none until its own
run is back, so a change to the problem is timed again. The runs are the core's own (submission 0): never stored as
submissions, never ranked. A core that stops while one runs times it again at its next start.

Not timed: the CPU pool (for development: its figures say nothing about a GPU), and CUDA problems (``lang: cu``:
no Python reference to call). Their rankings carry no comparison.

The speed of light of a (problem, GPU) is the score a kernel would get if every benchmark shape ran at the
problem's roofline floor on that GPU's datasheet peaks (``harness.roofline``), aggregated by the same ranking rule;
a kernel's share is that score over its own. Unknown peaks (the CPU, an unlisted GPU) or no roofline: no share.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.contracts.bus import BusError
from core.contracts.gpus import CPU_POOL
from core.contracts.messages import RunResult, new_id
from core.service import validation
from core.service.deps import Deps
from core.service.jobs import run_job
from core.service.leaderboards import Board
from harness import roofline, stats
from harness.device import peaks_for

log = logging.getLogger(__name__)
FILE_NAME = "reference_timing.py"


async def time_every_board(deps: Deps) -> None:
    """Queue the reference's run wherever a leaderboard's current version lacks its time (at the core's start)."""
    for summary in await deps.db.read(deps.db.store.list_leaderboards):
        if board := await deps.boards.get(summary.name):
            await time_board(deps, board)


async def time_board(deps: Deps, board: Board) -> None:
    """Queue the reference's run on each GPU of ``board`` that has no time for its version and none on the way."""
    lb, problem = board.leaderboard, board.problem
    if problem.task.lang == "cu" or "reference.py" not in problem.files:
        return
    timed = deps.db.store.references.of(lb.name, lb.version)
    for gpu in lb.gpus:
        key = (lb.name, lb.version, gpu)
        if gpu == CPU_POOL or gpu in timed or deps.references.waiting_for(key):
            continue
        run_id = new_id()
        job = run_job(
            board,
            run_id=run_id,
            gpu=gpu,
            submission_id=0,
            file_name=FILE_NAME,
            source=validation.source(problem),
            mode="ranked",
        )
        deps.references.add(run_id, key)
        try:
            await deps.publish_job(job)
        except BusError as exc:
            deps.references.pop(run_id)
            log.warning(
                "the reference of %s could not be queued on %s (%s); the next start tries again", *key[::2], exc
            )


async def arrived(result: RunResult, deps: Deps) -> None:
    """Store the reference's score from its run's result; a run that did not pass leaves no time (and a warning)."""
    key = deps.references.pop(result.run_id)
    if key is None:
        return
    score = result.result.score_us
    if not result.result.passed or score is None:
        log.warning(
            "the reference of %s (version %d) did not pass its timed run on %s (%s): its rankings there have no "
            "comparison with it",
            *key,
            result.result.status.value,
        )
        return
    await deps.db.write(deps.db.store.references.record, *key, score, result.run_id, deps.now())


def light_score_us(board: Board, gpu: str) -> float | None:
    """The score a kernel at the roofline floor of every benchmark shape would get on ``gpu``; None when unknown."""
    task = board.problem.task
    peaks = peaks_for(gpu)
    try:
        floors = [roofline.speed_of_light_floor_us(task.roofline, spec, peaks) for spec in task.benchmarks]
    except ValueError as exc:  # a roofline the problem's shapes cannot evaluate: the harness says so on each run
        log.debug("no speed of light for %s on %s: %s", board.leaderboard.name, gpu, exc)
        return None
    known = [floor for floor in floors if floor is not None and floor > 0]
    if not known or len(known) < len(floors):
        return None
    return stats.score(known, task.ranking_by)


@dataclass(frozen=True)
class Yardstick:
    """What a score on one (leaderboard, GPU) is compared with: the reference's score and the speed of light's."""

    reference_us: float | None
    light_us: float | None

    @property
    def known(self) -> bool:
        return self.reference_us is not None or self.light_us is not None

    def figures(self, score_us: float) -> dict[str, float | None]:
        """``vs_reference``: how many times faster than the reference; ``light_share``: the share of light, 0..1."""
        return {
            "vs_reference": self.reference_us / score_us if self.reference_us and score_us > 0 else None,
            "light_share": self.light_us / score_us if self.light_us and score_us > 0 else None,
        }

    def cells(self, score_us: float) -> list[str]:
        """The figures as a ranking table shows them: ``2.10×`` and ``37%`` (``-`` where unknown)."""
        figures = self.figures(score_us)
        times, share = figures["vs_reference"], figures["light_share"]
        return [f"{times:.2f}×" if times else "-", f"{share:.0%}" if share else "-"]


COLUMNS = ["vs reference", "% of light"]
MEANING = (
    "vs reference: how many times faster than the problem's reference, timed the same way on the same GPU; "
    "% of light: the share of what the GPU's datasheet peaks allow for the benchmark shapes."
)


def yardsticks(deps: Deps, board: Board, gpus: list[str]) -> dict[str, Yardstick]:
    """Each GPU's yardstick for the current version of ``board``'s problem."""
    lb = board.leaderboard
    timed = deps.db.store.references.of(lb.name, lb.version)  # the store keeps them in memory: no read
    return {gpu: Yardstick(timed.get(gpu), light_score_us(board, gpu)) for gpu in gpus}
