"""Opening the file: migrations, re-opening, refusing newer files, the single-owner lock, unusable files."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from storage_testkit import python_child, raw_rows

from storage import SchemaTooNew, Store, StoreError, StoreLocked
from storage._schema import MIGRATIONS, Migration, migrate

TABLES = {
    "api_tokens",
    "people",
    "identities",
    "leaderboards",
    "code_blobs",
    "submissions",
    "runs",
    "shape_results",
    "personal_bests",
    "audit_log",
    "schema_migrations",
    "leaderboard_versions",
    "challenges",
    "challenge_actions",
    "teams",
    "roles",
    "bans",
    "rate_limits",
    "person_links",
    "leaderboard_rate_limits",
    "reports",
    "review_decisions",
    "reference_times",
    "rounds",
}


def test_a_new_file_gets_every_migration(db_path: Path) -> None:
    Store(db_path).close()
    tables = {name for (name,) in raw_rows(db_path, "SELECT table_name FROM information_schema.tables")}
    assert tables == TABLES
    versions = raw_rows(db_path, "SELECT version FROM schema_migrations ORDER BY version")
    assert versions == [(v,) for v in range(1, len(MIGRATIONS) + 1)]


def test_reopening_keeps_data_and_applies_nothing_twice(db_path: Path) -> None:
    with Store(db_path) as store:
        person_id = store.person("slack", "U1", "Ann")
    with Store(db_path) as store:
        assert store.person("slack", "U1", "Ann") == person_id
    assert raw_rows(db_path, "SELECT count(*) FROM schema_migrations") == [(len(MIGRATIONS),)]


def test_an_older_file_is_upgraded_in_order(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    con = duckdb.connect(str(db_path))
    assert migrate(con, MIGRATIONS) == len(MIGRATIONS)
    con.execute("INSERT INTO people (display_name) VALUES ('kept')")
    later = Migration("add a column", ("ALTER TABLE people ADD COLUMN team VARCHAR",))
    assert migrate(con, (*MIGRATIONS, later)) == len(MIGRATIONS) + 1
    assert con.execute("SELECT display_name, team FROM people").fetchall() == [("kept", None)]
    assert con.execute("SELECT name FROM schema_migrations ORDER BY version DESC LIMIT 1").fetchall() == [
        ("add a column",)
    ]
    con.close()


def test_a_failing_migration_leaves_the_file_at_the_previous_version(db_path: Path) -> None:
    Store(db_path).close()
    con = duckdb.connect(str(db_path))
    broken = Migration("broken", ("CREATE TABLE half_done (x INTEGER)", "SELECT * FROM no_such_table"))
    with pytest.raises(duckdb.CatalogException):
        migrate(con, (*MIGRATIONS, broken))
    tables = {name for (name,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert "half_done" not in tables
    con.close()
    assert raw_rows(db_path, "SELECT max(version) FROM schema_migrations") == [(len(MIGRATIONS),)]


def test_a_file_from_a_newer_kernelrank_is_refused(db_path: Path) -> None:
    Store(db_path).close()
    con = duckdb.connect(str(db_path))
    con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, 'from the future')", [len(MIGRATIONS) + 5])
    con.close()
    with pytest.raises(SchemaTooNew, match="newer kernelrank") as refused:
        Store(db_path)
    assert f"schema version {len(MIGRATIONS) + 5}" in str(refused.value)
    # Refusing did not hold the file: it can be opened again right away.
    raw_rows(db_path, "SELECT 1")


def test_a_second_process_is_locked_out(db_path: Path) -> None:
    Store(db_path).close()
    holder = python_child(
        "import sys\n"
        "from storage import Store\n"
        f"store = Store({str(db_path)!r})\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "store.close()\n"
    )
    try:
        assert holder.stdout.readline().strip() == "ready", holder.stderr.read()
        with pytest.raises(StoreLocked, match="in use by another process"):
            Store(db_path)
    finally:
        holder.communicate("done\n", timeout=60)
    assert holder.returncode == 0
    Store(db_path).close()  # free again once the holder has gone


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_text("these are my notes, not a database\n" * 200)
    with pytest.raises(StoreError, match="kernelrank database file"):
        Store(path)


def test_a_closed_store_says_so(db_path: Path) -> None:
    store = Store(db_path)
    store.close()
    store.close()  # closing twice is harmless
    with pytest.raises(StoreError, match="closed"):
        store.stats()
