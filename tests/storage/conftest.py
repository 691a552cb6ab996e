"""Storage fixtures: a real DuckDB file per test, with one leaderboard offered on H100 and T4."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from storage_testkit import Builder

from storage import Store
from storage.records import Leaderboard


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "var" / "kernelrank.duckdb"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store(db_path) as opened:
        opened.upsert_leaderboard(
            Leaderboard(
                name="vecadd",
                description="add two vectors",
                problem={"name": "vecadd"},
                problem_sha="ab" * 32,
                gpus=["H100", "T4"],
                ranking_by="geom",
                secret_seed=99,
            )
        )
        yield opened


@pytest.fixture
def build(store: Store) -> Builder:
    return Builder(store)
