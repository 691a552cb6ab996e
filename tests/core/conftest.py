"""The ``deps`` fixture: handlers' dependencies on a real DuckDB file with the vectoradd fixture problem loaded."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from handler_kit import FIXTURES, NOW, Collected

from core.contracts.config import Settings
from core.service.bootstrap import build_deps
from core.service.db import Database
from core.service.deps import Deps
from core.service.leaderboards import load_new_problems
from storage.store import Store


@pytest.fixture
async def deps(tmp_path: Path) -> AsyncIterator[tuple[Deps, Collected]]:
    problems = tmp_path / "problems"
    shutil.copytree(FIXTURES / "vectoradd", problems / "vectoradd")
    settings = Settings(home=tmp_path / "var", problems_dir=problems, admins=["discord:boss"])
    db = Database(Store(settings.database))
    await db.write(load_new_problems, db.store, problems, ["CPU", "H100"])
    jobs = Collected()
    built = build_deps(db, settings, jobs.publish, now=lambda: NOW)
    yield built, jobs
    await built.writer.close()
    await db.close()
