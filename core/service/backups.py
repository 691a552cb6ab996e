"""``admin backup [PATH]``: the running core writes a consistent copy of its database (``storage._backup``).

The path is on the core's host, since the core is the only process that opens the database: a relative one is
under ``<home>/backups``, none gives ``<home>/backups/kernelrank-<UTC time>.duckdb``. An existing file is never
overwritten. ``kernelrank restore PATH`` (``core.launch.restore``) brings a backup back on a stopped core.
"""

from __future__ import annotations

import logging

from core.contracts import reply_parts
from core.contracts.errors import UserError
from core.contracts.messages import Command, Reply
from core.service.args import reply
from core.service.deps import Deps
from core.service.people import Caller
from storage import BackupError

log = logging.getLogger(__name__)


async def backup(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    folder = deps.settings.home.absolute() / "backups"
    given = str(cmd.args.get("path") or "").strip()
    path = folder / (given or f"kernelrank-{deps.now():%Y%m%d-%H%M%S}.duckdb")  # an absolute ``given`` stays as it is
    try:
        facts = await deps.db.read(deps.db.store.backup, path)
    except BackupError as exc:
        log.warning("backup to %s failed: %r", path, exc.__cause__)
        raise UserError(str(exc)) from exc
    await deps.db.write(deps.db.store.audit, caller.signature, "backup", {"path": str(facts.path)})
    words = (
        f"Backed up {facts.submissions} submissions and {facts.runs_done} finished runs (schema version "
        f"{facts.schema_version}) to {facts.path} on the core's host. Restore it with `kernelrank restore "
        f"{facts.path}` on a stopped core."
    )
    data = {
        "path": str(facts.path),
        "submissions": facts.submissions,
        "runs_done": facts.runs_done,
        "schema_version": facts.schema_version,
    }
    return reply(cmd, "Backup", [reply_parts.text(words)], data=data)
