"""``kernelrank restore PATH``: put a backup (``kernelrank admin backup``) in the place of the database, the core
stopped.

Not a bus command (it is not in the command registry): the core must not be running, so no core could answer it; it
works on the database file of this host's settings (``KERNELRANK_HOME`` or ``KERNELRANK_DB_PATH``), as ``kernelrank
workers`` works on the secrets folder. ``storage._backup.restore`` says what happens to the file it replaces.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.contracts.config import Settings
from storage import StoreError, restore


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="kernelrank restore",
        description="Restore a backup made by `kernelrank admin backup` (stop the core first).",
    )
    parser.add_argument("path", type=Path, help="the backup file")
    args = parser.parse_args(argv)
    try:
        facts, kept = restore(args.path, settings.database)
    except StoreError as exc:
        print(f"kernelrank restore: {exc}", file=sys.stderr)
        return 1
    print(
        f"Restored {facts.submissions} submissions and {facts.runs_done} finished runs from {args.path} into "
        f"{settings.database}"
        + (f"; the file it replaced is kept as {kept}." if kept else ".")
        + " Start the core again: runs that were in flight when the backup was made are queued again from JetStream "
        "(docs/deploy.md, Backups)."
    )
    return 0
