"""Backups (``Store.backup``) and restores (``storage.restore``) on real DuckDB files, and the bad input of each:
a path that cannot be written, a file that exists, a backup from a newer schema, a core that still runs."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from storage_testkit import Builder, python_child, raw_rows

from storage import BackupError, Store, StoreLocked, restore
from storage._schema import MIGRATIONS, migrate


def test_a_backup_holds_every_stored_run_and_the_store_goes_on(store: Store, build: Builder, tmp_path: Path) -> None:
    person = build.person("Ada")
    before = [build.submit(person) for _ in range(3)]
    facts = store.backup(tmp_path / "backups" / "b-1.duckdb")
    build.submit(person)  # after the backup: the store goes on, the backup does not see it
    assert (facts.submissions, facts.runs_done, facts.schema_version) == (3, 3, len(MIGRATIONS))
    stored = {run for (run,) in raw_rows(facts.path, "SELECT run_id FROM runs WHERE state = 'done'")}
    assert stored == {run for submission in before for run, _ in submission.runs}
    assert [p.name for p in facts.path.parent.iterdir()] == ["b-1.duckdb"]  # no partial file left behind


def test_a_backup_path_that_cannot_be_written_is_one_sentence_and_writes_nothing(store: Store, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    with pytest.raises(BackupError) as refused:
        store.backup(blocker / "b.duckdb")
    message = str(refused.value)
    assert message.startswith(f"cannot write a backup in {blocker} (") and message.endswith("nothing was written.")
    assert blocker.read_text() == "a file where the folder should be"


def test_a_backup_never_overwrites_a_file(store: Store, tmp_path: Path) -> None:
    taken = tmp_path / "b.duckdb"
    taken.write_bytes(b"precious")
    with pytest.raises(BackupError, match="exists already: name a new file"):
        store.backup(taken)
    assert taken.read_bytes() == b"precious"


def test_a_restore_replaces_the_database_and_keeps_the_file_it_replaced(
    store: Store, build: Builder, db_path: Path, tmp_path: Path
) -> None:
    build.submit(build.person("Ada"))
    backup = store.backup(tmp_path / "before-grace.duckdb").path  # DuckDB names it after the file: any characters
    build.submit(build.person("Grace"))
    store.close()
    facts, kept = restore(backup, db_path)
    assert facts.submissions == 1 and kept is not None
    assert raw_rows(db_path, "SELECT count(*) FROM submissions") == [(1,)]
    assert raw_rows(kept, "SELECT count(*) FROM submissions") == [(2,)]
    Store(db_path).close()  # the restored file opens as the core opens it


def test_a_backup_of_the_previous_schema_is_migrated_on_restore(tmp_path: Path) -> None:
    old = tmp_path / "old.duckdb"
    with duckdb.connect(str(old)) as con:
        migrate(con, MIGRATIONS[:-1])
        con.execute("INSERT INTO people (display_name) VALUES ('kept')")
    database = tmp_path / "fresh" / "kernelrank.duckdb"
    facts, kept = restore(old, database)
    assert (facts.schema_version, kept) == (len(MIGRATIONS) - 1, None)
    assert raw_rows(database, "SELECT max(version) FROM schema_migrations") == [(len(MIGRATIONS),)]
    assert raw_rows(database, "SELECT display_name FROM people") == [("kept",)]


def test_a_backup_from_a_newer_schema_is_refused_and_changes_nothing(
    store: Store, db_path: Path, tmp_path: Path
) -> None:
    newer = store.backup(tmp_path / "newer.duckdb").path
    with duckdb.connect(str(newer)) as con:
        con.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (?, 'from the future')", [len(MIGRATIONS) + 1]
        )
    store.close()
    before = db_path.read_bytes()
    with pytest.raises(BackupError) as refused:
        restore(newer, db_path)
    assert "was made by a newer kernelrank" in str(refused.value)
    assert str(refused.value).endswith("nothing was changed.")
    assert db_path.read_bytes() == before and sorted(p.name for p in db_path.parent.iterdir()) == [db_path.name]


def test_a_restore_while_the_core_holds_the_database_is_refused(store: Store, db_path: Path, tmp_path: Path) -> None:
    backup = store.backup(tmp_path / "b.duckdb").path
    store.close()
    holder = python_child(
        f"import sys\nfrom storage import Store\nstore = Store({str(db_path)!r})\nprint('ready', flush=True)\n"
        "sys.stdin.readline()\nstore.close()\n"
    )
    try:
        assert holder.stdout.readline().strip() == "ready", holder.stderr.read()
        with pytest.raises(StoreLocked, match="stop the core"):
            restore(backup, db_path)
    finally:
        holder.communicate("done\n", timeout=60)
    assert sorted(p.name for p in db_path.parent.iterdir()) == [db_path.name]


def test_something_that_is_not_a_backup_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.duckdb"
    junk.write_text("not a database")
    with pytest.raises(BackupError, match="is not a kernelrank backup"):
        restore(junk, tmp_path / "var" / "kernelrank.duckdb")
