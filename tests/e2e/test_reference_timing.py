"""The problem's reference timed by the judge on each GPU pool (not the CPU one), once per problem version, through a
real worker and the real harness (on this CPU, for a pool named H100); rankings then say how many times faster
than the reference a kernel is and its share of the speed of light, figures checked against the harness's own."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from core.contracts.messages import CommandKind
from core.service import reference_timing
from harness import roofline, stats
from harness.device import peaks_for
from harness.loading import load_problem
from runners.fake import FakeRunner
from runners.local import LocalRunner
from runners.worker import Worker
from tests.e2e.conftest import FIXTURES

KERNEL = "import torch\n\ndef custom_kernel(data):\n    a, b, out = data\n    return torch.add(a, b, out=out)\n"


class Recording(LocalRunner):
    """The real harness on this CPU for the H100 pool's jobs (which ask for CUDA), keeping each job's result."""

    def __init__(self) -> None:
        super().__init__()
        self.results: list = []

    async def run(self, job, on_progress=None):
        job = dataclasses.replace(job, device="cpu")
        result = await super().run(job, on_progress)
        self.results.append((job, result))
        return result


async def _reference_time(system, runner: Recording, version: int, timeout_s: float = 180) -> float:
    for _ in range(int(timeout_s / 0.2)):
        if "H100" in (timed := system.store.references.of("vectoradd", version)):
            return timed["H100"]
        failed = [result for _, result in runner.results if not result.passed]
        assert not failed, failed[0].failure
        await asyncio.sleep(0.2)
    raise AssertionError(f"the reference of version {version} was never timed on H100")


@pytest.mark.slow
async def test_the_reference_is_timed_per_gpu_and_version_and_rankings_compare_with_it(make_system) -> None:
    system = await make_system(FakeRunner(), pools=["CPU", "H100"])
    runner, stop = Recording(), asyncio.Event()
    worker = asyncio.create_task(Worker(system.bus, "H100", runner, poll_s=0.2, status_s=0.5).run(stop))
    try:
        reference_us = await _reference_time(system, runner, 1)
        ((job, result),) = runner.results
        assert job.mode == "ranked" and job.submission_source.endswith("custom_kernel = ref_kernel\n")
        assert reference_us == result.score_us  # the judge's own score of the reference, as ranked runs get
        assert system.store.references.of("vectoradd", 1).keys() == {"H100"}  # the CPU pool is not timed

        accepted = await system.submit("ada", KERNEL, leaderboard="vectoradd", gpu="H100")
        await system.finals({run["run_id"] for run in accepted.data["runs"]}, timeout_s=180)
        shown = await system.ask("ada", CommandKind.SHOW, leaderboard="vectoradd", gpu="H100")
        (row,) = shown.data["rankings"]["H100"]
        problem = load_problem(FIXTURES / "vectoradd")
        floors = [
            roofline.speed_of_light_floor_us(problem.task.roofline, spec, peaks_for("H100"))
            for spec in problem.task.benchmarks
        ]
        light_us = stats.score(floors, problem.task.ranking_by)
        assert row["vs_reference"] == pytest.approx(reference_us / row["score_us"])
        assert row["light_share"] == pytest.approx(light_us / row["score_us"])
        (table,) = [part for part in shown.parts if part.headers]
        assert table.headers[3:5] == ["vs reference", "% of light"]
        assert table.rows[0][3] == f"{reference_us / row['score_us']:.2f}×"
        on_cpu = await system.ask("ada", CommandKind.SHOW, leaderboard="vectoradd", gpu="CPU")
        assert on_cpu.data["yardsticks"] == {"CPU": {"reference_us": None, "light_us": None}}

        deps = system.service.deps
        await reference_timing.time_every_board(deps)  # version 1 is timed: nothing is queued again
        board = system.store.get_leaderboard("vectoradd")
        system.store.save_leaderboard(dataclasses.replace(board, version=2), deps.now())  # the problem changes
        deps.boards.forget("vectoradd")
        await reference_timing.time_every_board(deps)
        assert await _reference_time(system, runner, 2) > 0
        assert len(runner.results) == 3  # version 1's reference, Ada's kernel, version 2's reference
    finally:
        stop.set()
        await worker
        await runner.close()
