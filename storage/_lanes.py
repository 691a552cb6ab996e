"""The store's one DuckDB connection and its write lanes: opening the file, a cursor per call, a transaction per
write, one writer per lane at a time, and closing.

Writes go in two lanes, each serialised by its own lock, that may commit at the same time: *intake* (new
submissions, people, leaderboards) inserts rows, and *outcomes* (running marks, results, replied marks,
rankings) updates runs that intake committed earlier, so the two never touch the same row. A new
submission then never waits behind a batch of results. A write that fails because the disk is full raises
``StoreFull`` and keeps nothing of the batch.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from storage.errors import StoreError, StoreFull, StoreLocked

log = logging.getLogger("storage.store")

Cursor = duckdb.DuckDBPyConnection

DISK_FULL = ("no space left on device", "disk full", "not enough space")


class Lanes:
    """The open database file: ``reading`` and ``writing`` give a cursor for one call; ``close`` ends it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.con = _connect(path)
        self.intake_lock = threading.Lock()
        self._outcome_lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Checkpoint (fold the WAL into the file) and close, once no call is in flight; a second close does nothing."""
        with self.intake_lock, self._outcome_lock:
            if self._closed:
                return
            self._closed = True
            try:
                self.con.execute("CHECKPOINT")
            except duckdb.Error as exc:  # a full disk, say: the write-ahead log still holds every commit
                log.error("could not checkpoint %s (%s); the next start replays its write-ahead log", self.path, exc)
            finally:
                self.con.close()
        log.info("closed database %s", self.path)

    @contextmanager
    def reading(self) -> Iterator[Cursor]:
        self._check_open()
        with self.con.cursor() as cur:
            yield cur

    @contextmanager
    def writing(self, lane: str = "intake") -> Iterator[Cursor]:
        """One transaction on its own cursor, one writer per lane at a time: committed whole or rolled back.
        Lane "both" holds both locks (intake first, as ``close`` does), for writes that touch both lanes' rows."""
        locks = {
            "intake": (self.intake_lock,),
            "outcomes": (self._outcome_lock,),
            "both": (self.intake_lock, self._outcome_lock),
        }[lane]
        with contextlib.ExitStack() as held:
            for lock in locks:
                held.enter_context(lock)
            self._check_open()
            with self.con.cursor() as cur, _disk_full_named(self.path):
                cur.begin()
                try:
                    yield cur
                    cur.commit()
                except BaseException:
                    with contextlib.suppress(duckdb.Error):  # a failed commit has already ended it
                        cur.rollback()
                    raise

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the database {self.path} is closed; open a new Store")


def _connect(path: Path) -> duckdb.DuckDBPyConnection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return duckdb.connect(str(path), config={"threads": 1})
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise StoreError(f"cannot open the database {path}; check that it is a kernelrank database file") from exc
        raise StoreLocked(
            f"the database {path} is in use by another process (only one kernelrank core may run on "
            "it); stop that process or use another database file"
        ) from exc
    except (duckdb.Error, OSError) as exc:
        raise StoreError(
            f"cannot open the database {path}; check that it is a kernelrank database file and that "
            "its folder is writable"
        ) from exc


@contextmanager
def _disk_full_named(path: Path) -> Iterator[None]:
    """A write that failed for lack of disk space becomes ``StoreFull``, with what to do."""
    try:
        yield
    except duckdb.Error as exc:
        if any(words in str(exc).lower() for words in DISK_FULL):
            raise StoreFull(
                f"the disk under the database {path} is full; the write was not stored. Free some "
                "space (or move KERNELRANK_HOME) and it works again."
            ) from exc
        raise
