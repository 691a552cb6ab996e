"""Errors raised by the store.

    StoreError            the database file cannot be used (not a DuckDB file, unreadable, closed store)
    ├── StoreLocked       another process holds the file (only one process, the core, may open it)
    ├── SchemaTooNew      the file was written by a newer kernelrank than this one
    ├── StoreFull         a write failed because the disk under the database is full (nothing of it was kept)
    └── BackupError       a backup could not be written, or a file could not be restored (nothing was changed)

Each message is one sentence that says what to do; the DuckDB detail is chained as ``__cause__``.
"""


class StoreError(Exception):
    """The database file cannot be used."""


class StoreLocked(StoreError):
    """Another process holds the database file."""


class SchemaTooNew(StoreError):
    """The database file's schema is newer than this build knows."""


class StoreFull(StoreError):
    """The disk under the database is full: the write was rolled back, earlier data is intact."""


class BackupError(StoreError):
    """A backup could not be written, or a backup could not be restored; nothing was written or changed."""
