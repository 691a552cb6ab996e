"""DuckDB storage, owned by the core: schema and migrations, writes, and the one set of ranking queries.

The public surface is ``Store`` (storage/store.py), the records in storage/records.py and the errors in
storage/errors.py; modules starting with an underscore are its implementation.
"""

from storage._backup import BackupFacts, read_facts, restore
from storage.errors import BackupError, SchemaTooNew, StoreError, StoreLocked
from storage.store import Store

__all__ = [
    "BackupError",
    "BackupFacts",
    "SchemaTooNew",
    "Store",
    "StoreError",
    "StoreLocked",
    "read_facts",
    "restore",
]
