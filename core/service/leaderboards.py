"""Loading problem folders as leaderboards."""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from core.contracts.gpus import CPU_POOL
from harness.loading import load_problem
from harness.problem import Problem, ProblemError
from storage.records import Leaderboard
from storage.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Board:
    """A leaderboard with its problem parsed once (problems carry every file, so parsing is not free)."""

    leaderboard: Leaderboard
    problem: Problem


class BoardCache:
    """Leaderboards by name, read from the store once: only this core writes them, and every write of one calls
    ``forget`` at once, so the next command sees the change (no restart)."""

    def __init__(self, load: Callable[[str], Awaitable[Leaderboard | None]]) -> None:
        self._load = load
        self._boards: dict[str, Board] = {}

    async def get(self, name: str) -> Board | None:
        if name not in self._boards:
            leaderboard = await self._load(name)
            if leaderboard is None:
                return None
            self._boards[name] = Board(leaderboard, Problem.from_dict(leaderboard.problem))
        return self._boards[name]

    def forget(self, name: str) -> None:
        self._boards.pop(name, None)


def offered_pools(problem: Problem, pools: list[str]) -> list[str]:
    """The pools a problem can run on: CPU only if the problem supports it, GPUs only for CUDA problems."""
    wants_cpu, wants_cuda = "cpu" in problem.task.devices, "cuda" in problem.task.devices
    return [p for p in pools if (wants_cpu if p == CPU_POOL else wants_cuda)]


def fitted(problem: Problem, pools: list[str]) -> Problem:
    """``problem``, allowed on the CPU when it declares no devices (GPU MODE's first format declares none) and
    this kernelrank serves the CPU but no pool it would use by default (CUDA): its reference's test run on the CPU
    then decides, instead of a refusal before anything ran."""
    undeclared = not problem.task.default_device and problem.task.lang == "py"
    if not undeclared or CPU_POOL not in pools or offered_pools(problem, pools):
        return problem
    devices = [*problem.task.devices, "cpu"]
    return dataclasses.replace(problem, task=dataclasses.replace(problem.task, devices=devices))


def leaderboard_for(problem: Problem, pools: list[str], public_after_close: bool = False) -> Leaderboard:
    return Leaderboard(
        name=problem.name,
        description=problem.task.description.strip(),
        problem=problem.to_dict(),
        problem_sha=problem.sha256,
        gpus=offered_pools(problem, pools),
        ranking_by=problem.task.ranking_by,
        secret_seed=secrets.randbits(62),
        public_after_close=public_after_close,
    )


def public_after_close(folder: Path) -> bool:
    """The folder's ``task.yml`` says ``public_after_close: true``: once the leaderboard closes, everyone may read
    its submissions' code. A platform setting, not part of the evaluation, so the harness does not read it."""
    try:
        raw = yaml.safe_load((folder / "task.yml").read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(raw, dict) and raw.get("public_after_close") is True


def load_new_problems(store: Store, problems_dir: Path, pools: list[str]) -> list[str]:
    """Create a leaderboard for every problem folder that has none yet; return the names created.

    Existing leaderboards are left alone: their secret seed and history must not change under people.
    """
    created = []
    # a task.yml, or GPU MODE's first format: a folder holding only reference.py (harness.first_format)
    problems = (p for p in problems_dir.glob("*/") if (p / "task.yml").is_file() or (p / "reference.py").is_file())
    for folder in sorted(problems):
        if store.get_leaderboard(folder.name) is not None:
            continue
        try:
            problem = load_problem(folder)
        except ProblemError as exc:
            log.error("skipping problem %s: %s", folder.name, exc)
            continue
        store.upsert_leaderboard(leaderboard_for(problem, pools, public_after_close(folder)))
        created.append(folder.name)
    if created:
        log.info("loaded %d leaderboards from %s: %s", len(created), problems_dir, ", ".join(created))
    return created
