"""What the shipped-problems suite runs over: problem folders, their solution fixtures, and staging helpers.

Collected at import, so test modules can parametrise with readable ids (``vectorsum/wrong/size_shortcut.py``).
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from harness.problem import Problem

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"
ALL_PROBLEM_DIRS = sorted(task.parent for task in PROBLEMS.glob("*/task.yml"))
# Python problems (lang: py); the CUDA ones (lang: cu) take .cu submissions and have a suite of their own.
CU_PROBLEM_DIRS = [
    folder for folder in ALL_PROBLEM_DIRS if re.search(r'(?m)^lang:\s*"?cu"?\s*$', (folder / "task.yml").read_text())
]
PROBLEM_DIRS = [folder for folder in ALL_PROBLEM_DIRS if folder not in CU_PROBLEM_DIRS]
# Written exactly in the public GPU MODE format, without kernelrank's extensions (see its README).
COMPAT_PROBLEM = "gpumode-compat-scale"

REQUIRES_CUDA = re.compile(r"^#!kernelrank\s+requires\s+cuda\b", re.MULTILINE | re.IGNORECASE)
# A wrong fixture that passes test mode on purpose: its shortcut only triggers on benchmark shapes.
RANKED_ONLY = re.compile(r"^# fixture: fails only in ranked mode\b", re.MULTILINE)
# Staged by every problem; purged from sys.modules so each staging imports its own copies.
STAGED_MODULES = ("reference", "task", "utils", "submission")


@dataclass(frozen=True)
class Solution:
    path: Path

    @property
    def problem(self) -> str:
        return self.path.parents[2].name

    @property
    def kind(self) -> str:
        """ "correct" or "wrong"."""
        return self.path.parent.name

    @property
    def source(self) -> str:
        return self.path.read_text()

    @property
    def requires_cuda(self) -> bool:
        return bool(REQUIRES_CUDA.search(self.source))

    @property
    def fails_only_in_ranked(self) -> bool:
        return bool(RANKED_ONLY.search(self.source))

    @property
    def id(self) -> str:
        return f"{self.problem}/{self.kind}/{self.path.name}"


def solutions(kind: str) -> list[Solution]:
    return [Solution(path) for folder in PROBLEM_DIRS for path in sorted(folder.glob(f"solutions/{kind}/*.py"))]


def python_sources() -> list[Path]:
    """Every template and solution file: code users read or run."""
    return sorted(
        path for folder in PROBLEM_DIRS for path in [*folder.glob("template*.py"), *folder.glob("solutions/*/*.py")]
    )


@contextlib.contextmanager
def staged_reference(problem: Problem, workdir: Path) -> Iterator[ModuleType]:
    """Write the problem's staged files to ``workdir`` and import its reference.py in this process."""
    for name, text in problem.files.items():
        (workdir / name).write_text(text)
    saved = {name: sys.modules.pop(name) for name in STAGED_MODULES if name in sys.modules}
    sys.path.insert(0, str(workdir))
    try:
        yield importlib.import_module("reference")
    finally:
        sys.path.remove(str(workdir))
        for name in STAGED_MODULES:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
