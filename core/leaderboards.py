"""Loading problem folders as leaderboards."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

from core.gpus import CPU_POOL
from harness.problem import Problem, ProblemError, load_problem
from storage.records import Leaderboard
from storage.store import Store

log = logging.getLogger(__name__)


def offered_pools(problem: Problem, pools: list[str]) -> list[str]:
    """The pools a problem can run on: CPU only if the problem supports it, GPUs only for CUDA problems."""
    wants_cpu, wants_cuda = "cpu" in problem.task.devices, "cuda" in problem.task.devices
    return [p for p in pools if (wants_cpu if p == CPU_POOL else wants_cuda)]


def leaderboard_for(problem: Problem, pools: list[str]) -> Leaderboard:
    return Leaderboard(name=problem.name, description=problem.task.description.strip(), problem=problem.to_dict(),
                       problem_sha=problem.sha256, gpus=offered_pools(problem, pools),
                       ranking_by=problem.task.ranking_by, secret_seed=secrets.randbits(62))


def load_new_problems(store: Store, problems_dir: Path, pools: list[str]) -> list[str]:
    """Create a leaderboard for every problem folder that has none yet; return the names created.

    Existing leaderboards are left alone: their secret seed and history must not change under people.
    """
    created = []
    for folder in sorted(p for p in problems_dir.glob("*/") if (p / "task.yml").is_file()):
        if store.get_leaderboard(folder.name) is not None:
            continue
        try:
            problem = load_problem(folder)
        except ProblemError as exc:
            log.error("skipping problem %s: %s", folder.name, exc)
            continue
        store.upsert_leaderboard(leaderboard_for(problem, pools))
        created.append(folder.name)
    if created:
        log.info("loaded %d leaderboards from %s: %s", len(created), problems_dir, ", ".join(created))
    return created
