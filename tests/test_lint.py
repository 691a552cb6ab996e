"""The tree stays as the project's pinned ruff wants it: `ruff check` and `ruff format --check` both clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]], ids=["check", "format"])
def test_ruff_finds_nothing(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
