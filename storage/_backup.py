"""Backups of the database file: made by the running core (``Store.backup``), restored on a stopped one (``restore``).

A backup is DuckDB's own ``COPY FROM DATABASE`` into a fresh file: one statement, so one consistent snapshot of
every table and sequence, taken while the core keeps writing (DuckDB's transactions isolate it from the writes
that commit meanwhile). It is written beside its final name and renamed into place once complete, so a backup path
never holds half a file, and an existing file is never overwritten.

``restore`` copies a backup over the database of a core that is not running, keeping the file it replaces (and
its write-ahead log) as ``<name>.before-restore-<time>``. The copy is migrated to this build's schema before it
takes the database's place, so a backup from an earlier version comes back up to date; one from a newer version
is refused. Either way nothing is changed until the restored copy is complete.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from storage._schema import MIGRATIONS, migrate
from storage._sql import one_row
from storage.errors import BackupError, StoreLocked

WAL_SUFFIX = ".wal"


@dataclass(frozen=True)
class BackupFacts:
    """What a backup file holds: its schema version, submissions and finished runs."""

    path: Path
    schema_version: int
    submissions: int
    runs_done: int


def write_backup(cur: duckdb.DuckDBPyConnection, path: Path) -> BackupFacts:
    """Copy the database ``cur`` is on to a new file at ``path``; ``BackupError`` (nothing written) when it cannot."""
    path = path.absolute()
    if path.exists():
        raise BackupError(f"{path} exists already: name a new file for the backup (kernelrank never overwrites one).")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackupError(_unwritable(path.parent, exc)) from exc
    if not os.access(path.parent, os.W_OK):
        raise BackupError(_unwritable(path.parent, PermissionError(13, "permission denied")))
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    alias = f"backup_{secrets.token_hex(4)}"
    (source,) = one_row(cur.execute("SELECT current_database()"))
    try:
        cur.execute(f"ATTACH {_quoted(partial)} AS {alias}")
        try:
            cur.execute(f"COPY FROM DATABASE {_name(source)} TO {alias}")
            facts = _facts(cur, alias, path)
            cur.execute(f"CHECKPOINT {alias}")
        finally:
            cur.execute(f"DETACH {alias}")
        os.replace(partial, path)
    except (duckdb.Error, OSError) as exc:
        _remove(partial)
        raise BackupError(_unwritable(path.parent, exc) if isinstance(exc, OSError) else _failed(path, exc)) from exc
    except BaseException:
        _remove(partial)
        raise
    return facts


def read_facts(path: Path) -> BackupFacts:
    """What the backup at ``path`` holds; ``BackupError`` when it is not a kernelrank database file."""
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            (name,) = one_row(con.execute("SELECT current_database()"))
            return _facts(con, name, path)
    except duckdb.Error as exc:
        raise BackupError(
            f"{path} is not a kernelrank backup (DuckDB cannot read it as one): give the file `kernelrank admin "
            "backup` wrote."
        ) from exc


def restore(backup: Path, database: Path, now: datetime | None = None) -> tuple[BackupFacts, Path | None]:
    """Put the backup at ``backup`` in the place of ``database`` (the core stopped), migrated to this build's schema;
    the facts of what was restored, and where the file it replaced was kept (None if there was none)."""
    if not backup.is_file():
        raise BackupError(f"there is no backup at {backup}: give the path `kernelrank admin backup` printed.")
    facts = read_facts(backup)
    if facts.schema_version > len(MIGRATIONS):
        raise BackupError(
            f"{backup} was made by a newer kernelrank (schema version {facts.schema_version}; this one knows up to "
            f"{len(MIGRATIONS)}): upgrade kernelrank, then restore it; nothing was changed."
        )
    _check_stopped(database)
    database.parent.mkdir(parents=True, exist_ok=True)
    partial = database.with_name(f".{database.name}.{secrets.token_hex(4)}.restoring")
    try:
        shutil.copyfile(backup, partial)
        with duckdb.connect(str(partial)) as con:
            con.execute("SET TimeZone = 'UTC'")
            migrate(con)
            con.execute("CHECKPOINT")
        kept = _set_aside(database, now or datetime.now(UTC))
        os.replace(partial, database)
    except BaseException:
        _remove(partial)
        raise
    return facts, kept


def _check_stopped(database: Path) -> None:
    """``StoreLocked`` while a core holds ``database`` (DuckDB locks the file of an open database)."""
    if not database.exists():
        return
    try:
        duckdb.connect(str(database)).close()
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise StoreLocked(
                f"a running core holds {database}: stop the core (and `kernelrank up`), then restore; nothing was "
                "changed."
            ) from exc
        raise


def _set_aside(database: Path, now: datetime) -> Path | None:
    """Move the database being replaced, and its write-ahead log, out of the way (a stale log would be replayed onto
    the restored file)."""
    if not database.exists():
        return None
    kept = database.with_name(f"{database.name}.before-restore-{now:%Y%m%d-%H%M%S}")
    os.replace(database, kept)
    wal = database.with_name(database.name + WAL_SUFFIX)
    if wal.exists():
        os.replace(wal, kept.with_name(kept.name + WAL_SUFFIX))
    return kept


def _facts(cur: duckdb.DuckDBPyConnection, database: str, path: Path) -> BackupFacts:
    catalog = _name(database)  # DuckDB names a database after its file: any characters
    version, submissions, done = one_row(
        cur.execute(
            f"SELECT (SELECT coalesce(max(version), 0) FROM {catalog}.schema_migrations), "
            f"(SELECT count(*) FROM {catalog}.submissions), "
            f"(SELECT count(*) FROM {catalog}.runs WHERE state = 'done')"
        )
    )
    return BackupFacts(path, version, submissions, done)


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _name(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _unwritable(folder: Path, exc: OSError) -> str:
    return (
        f"cannot write a backup in {folder} ({exc.strerror or exc}): name a folder the core's user may write to; "
        "nothing was written."
    )


def _failed(path: Path, exc: duckdb.Error) -> str:
    if "space" in str(exc).lower():
        return f"the disk under {path.parent} is full: free some space or name another disk; nothing was written."
    return f"DuckDB could not copy the database to {path}: see the core's log; nothing was written."


def _remove(path: Path) -> None:
    for leftover in (path, path.with_name(path.name + WAL_SUFFIX)):
        with contextlib.suppress(OSError):
            leftover.unlink()
