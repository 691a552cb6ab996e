"""The tree stays as the project's pinned tools want it: `ruff check` and `ruff format --check` both clean, and mypy
(`make typecheck`, configured by ``[tool.mypy]`` in pyproject.toml) finding no error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_the_checkers_find_nothing(command: list[str]) -> None:
    # mypy without its .mypy_cache (a fresh clone) takes about a minute on a loaded 2-core machine, then seconds
    done = subprocess.run([sys.executable, "-m", *command], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
