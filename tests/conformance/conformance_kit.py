"""What the conformance suite runs over: public-format problems and their labelled solutions.

``problems/<name>/`` is a problem exactly as GPU MODE's format writes it (``task.yml`` without kernelrank's
keys, or only a first-format ``reference.py``); ``solutions/<name>/{correct,wrong}/*.py`` are submissions.
A wrong solution says why it must fail in a header line ``# expect: <failure kind> | <words of the
message>``; ``#!kernelrank requires cuda`` marks the ones that need a GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.judge.judge_process import REQUIRES_CUDA

HERE = Path(__file__).resolve().parent
PROBLEMS = HERE / "problems"
SOLUTIONS = HERE / "solutions"
# The keys of GPU MODE's task.yml: the conformance problems use no others.
GPU_MODE_KEYS = {
    "files",
    "lang",
    "description",
    "config",
    "templates",
    "tests",
    "benchmarks",
    "test_timeout",
    "benchmark_timeout",
    "ranked_timeout",
    "ranking_by",
    "seed",
    "multi_gpu",
}
_EXPECT = re.compile(r"^# expect: (\w+) \| (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Solution:
    path: Path

    @property
    def problem(self) -> str:
        return self.path.parents[1].name

    @property
    def correct(self) -> bool:
        return self.path.parent.name == "correct"

    @property
    def source(self) -> str:
        return self.path.read_text()

    @property
    def requires_cuda(self) -> bool:
        return bool(REQUIRES_CUDA.search(self.source))

    @property
    def expected(self) -> tuple[str, str]:
        """(failure kind, words its message must contain) of a wrong solution."""
        found = _EXPECT.search(self.source)
        if found is None:
            raise ValueError(f"{self.path} says nothing about why it must fail ('# expect: kind | words').")
        return found[1], found[2].strip()

    @property
    def id(self) -> str:
        return f"{self.problem}/{self.path.parent.name}/{self.path.name}"


def problem_folders() -> list[Path]:
    return sorted(p for p in PROBLEMS.iterdir() if (p / "task.yml").is_file() or (p / "reference.py").is_file())


def solutions() -> list[Solution]:
    return [Solution(path) for path in sorted(SOLUTIONS.glob("*/*/*.py"))]
