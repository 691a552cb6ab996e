"""``template`` gives every language a problem ships (or the one asked for); ``eval-code`` one language's files."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from handler_kit import NOW, Collected, ask

from core.contracts.config import Settings
from core.contracts.messages import CommandKind, PartKind
from core.service.bootstrap import build_deps
from core.service.db import Database
from core.service.deps import Deps
from core.service.leaderboards import load_new_problems
from storage.store import Store

SHIPPED = Path(__file__).resolve().parents[2] / "problems" / "vectoradd"  # Python and Triton templates


@pytest.fixture
async def shipped(tmp_path: Path) -> AsyncIterator[Deps]:
    problems = tmp_path / "problems"
    shutil.copytree(SHIPPED, problems / "vectoradd")
    for shared in ("utils.py", "utils.h"):  # the shipped problems' common files
        shutil.copy(SHIPPED.parent / shared, problems / shared)
    settings = Settings(home=tmp_path / "var", problems_dir=problems)
    db = Database(Store(settings.database))
    await db.write(load_new_problems, db.store, problems, ["CPU"])
    built = build_deps(db, settings, Collected().publish, now=lambda: NOW)
    yield built
    await built.writer.close()
    await db.close()


async def test_every_template_without_a_language_and_one_with(shipped) -> None:
    every = await ask(shipped, "ada", CommandKind.TEMPLATE, leaderboard="vectoradd")
    files = [p.filename for p in every.parts if p.kind is PartKind.CODE]
    assert files == ["vectoradd-python.py", "vectoradd-triton.py"] and "ships 2 templates" in every.parts[0].text
    triton = await ask(shipped, "ada", CommandKind.TEMPLATE, leaderboard="vectoradd", lang="triton")
    assert [p.filename for p in triton.parts] == ["vectoradd-triton.py"] and "triton" in triton.data["source"]
    missing = await ask(shipped, "ada", CommandKind.TEMPLATE, leaderboard="vectoradd", lang="HIP")
    assert missing.data["error"] == "invalid" and "Python, Triton" in missing.parts[0].text


async def test_eval_code_for_one_language(shipped) -> None:
    python = await ask(shipped, "ada", CommandKind.EVAL_CODE, lang="python")
    assert python.data["files"] and all(f.endswith(".py") for f in python.data["files"])
    cuda = await ask(shipped, "ada", CommandKind.EVAL_CODE, lang="CUDA")
    assert cuda.data["files"] == [f"harness/builds/{name}" for name in ("cu_judge.cu", "cu_runner.cu", "cu_values.h")]
    unknown = await ask(shipped, "ada", CommandKind.EVAL_CODE, lang="cobol")
    assert unknown.data["error"] == "invalid" and "python or cuda" in unknown.parts[0].text
