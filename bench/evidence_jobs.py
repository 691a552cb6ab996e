"""Running the shipped solutions for GPU evidence: through a warm harness server, or imported into this process.

``Evaluator`` runs one solution as a ranked (or other) job with this run's secret seed and prints a line per
evaluation; ``problem_modules`` and ``load_kernel`` import a problem's reference and an honest solution here,
for timing them beside the harness (``gpu_evidence`` sections b and e).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout, no install needed

from evidence_report import say  # noqa: E402

from harness import EvalJob, EvalResult, HarnessServer, Mode, Problem  # noqa: E402
from harness.judge.judge_process import REQUIRES_CUDA  # noqa: E402 - the harness's own reading of the CUDA header

PROBLEMS = REPO / "problems"
SECRET_SEED = 20261121  # one leaderboard's secret: every ranked job of this run shares it
JOB_TIMEOUT_S = 120.0  # per-evaluation limit for this run (task.yml says up to 300 s)


@dataclass
class Evaluation:
    solution: Path
    result: EvalResult
    wall_s: float  # from handing the job to the server to holding its result

    @property
    def kind(self) -> str:
        return self.result.failure.kind.value if self.result.failure else "-"


class Evaluator:
    """Runs solutions through one warm harness server on one device."""

    def __init__(self, server: HarnessServer, device: str) -> None:
        self.server, self.device = server, device

    def evaluate(
        self, problem: Problem, solution: Path, mode: Mode = Mode.RANKED, shape_budget_ms: float | None = None
    ) -> Evaluation:
        """``shape_budget_ms`` shortens the timed loops where only the verdict matters."""
        task = dataclasses.replace(
            problem.task,
            ranked_timeout=min(problem.task.ranked_timeout, JOB_TIMEOUT_S),
            benchmark_timeout=min(problem.task.benchmark_timeout, JOB_TIMEOUT_S),
            shape_budget_ms=shape_budget_ms or problem.task.shape_budget_ms,
        )
        job = EvalJob(
            problem=dataclasses.replace(problem, task=task),
            submission_name=solution.name,
            submission_source=solution.read_text(),
            mode=mode,
            device=self.device,
            secret_seed=SECRET_SEED,
            run_id=f"evidence-{problem.name}-{solution.stem}",
        )
        started = time.perf_counter()
        result = self.server.evaluate(job)
        evaluation = Evaluation(solution, result, time.perf_counter() - started)
        score = f"score {result.score_us:.2f} us" if result.score_us is not None else f"kind {evaluation.kind}"
        say(
            f"  {problem.name}/{solution.name} {mode.value}: {result.status.value}, {score}, "
            f"wall {evaluation.wall_s:.2f} s"
        )
        return evaluation


def requires_cuda(solution: Path) -> bool:
    return bool(REQUIRES_CUDA.search(solution.read_text()))


def plain_solution(problem: str) -> Path:
    """The problem's plain-PyTorch correct solution: "torch" in the name, else the first not needing CUDA."""
    candidates = sorted((PROBLEMS / problem / "solutions" / "correct").glob("*.py"))
    named = [path for path in candidates if "torch" in path.stem.lower()]
    portable = [path for path in candidates if not requires_cuda(path)]
    if not (named or portable):
        raise FileNotFoundError(f"problems/{problem}/solutions/correct has no plain-PyTorch solution")
    return (named or portable)[0]


@contextlib.contextmanager
def problem_modules(problem: str) -> Iterator[ModuleType]:
    """The problem's reference module, importable with its task.py and the shared utils.py on the path."""
    folder = PROBLEMS / problem
    staged = ("reference", "task", "utils")
    saved_path = list(sys.path)
    for name in staged:
        sys.modules.pop(name, None)
    sys.path[:0] = [str(folder), str(folder.parent)]
    try:
        yield importlib.import_module("reference")
    finally:
        sys.path[:] = saved_path
        for name in staged:
            sys.modules.pop(name, None)


def load_kernel(solution: Path) -> Callable[[Any], Any]:
    """``custom_kernel`` of an honest solution (inside ``problem_modules``, so its ``task`` import works)."""
    spec = importlib.util.spec_from_file_location(
        f"evidence_{solution.parent.parent.parent.name}_{solution.stem}", solution
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel
