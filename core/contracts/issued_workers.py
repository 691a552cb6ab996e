"""The workers issued bus credentials: one NATS user each, named as the worker, bound to its GPU pools.

Kept by the host that holds ``<home>/secrets`` (written by ``kernelrank workers add`` and ``kernelrank up``):

==============================  =========================================================================
``workers.json``                every worker ever issued: its pools, its password, when it was added and,
                                once revoked, when (a revoked name is never issued again, so a stolen key
                                of that name stays useless)
``workers/<name>.json``         the worker's credential file: ``{"user", "password", "key", "pools"}``, the
                                one file a worker needs (``KERNELRANK_NATS_CREDENTIALS``); ``key`` is its
                                signing key (``core.contracts.signing.worker_key``). A worker issued for
                                an operator-mode NATS (``operator_nats``) has no password here: its NATS
                                user is made by the operator's own tooling, and its file is a key file,
                                ``{"user", "key", "pools"}`` (``KERNELRANK_WORKER_KEY_FILE``)
==============================  =========================================================================

The server's configuration (``core.contracts.credentials.embedded_server_config``) gives each live worker a
user with ``core.contracts.roles.worker_permissions``; the core reads the registry to ignore pool status
from a worker for a pool it was not issued for, and every report of a revoked worker
(``core.service.worker_reports``).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core.contracts.config import ConfigError
from core.contracts.localfiles import private_folder, write_private
from core.contracts.signing import worker_key

REGISTRY = "workers.json"
FOLDER = "workers"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")
_POOL = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")
RESERVED_PREFIX = "kernelrank-"  # the roles' own users


@dataclass(frozen=True)
class IssuedWorker:
    name: str
    pools: tuple[str, ...]
    password: str
    added_at: str
    revoked_at: str | None = None

    @property
    def live(self) -> bool:
        return self.revoked_at is None

    @property
    def operator_nats(self) -> bool:
        """Issued for an operator-mode NATS: no password of ours, its NATS user is the operator's."""
        return not self.password


def check_name(name: str) -> str:
    """``name`` when it can be a worker's name (its NATS user and subject token); else one clear sentence."""
    if not _NAME.fullmatch(name) or name.startswith(RESERVED_PREFIX):
        raise ConfigError(
            f"{name!r} cannot name a worker: use up to 63 letters, digits and dashes, starting with a letter or "
            f"digit and not with {RESERVED_PREFIX!r} (e.g. gpu-box-1)."
        )
    return name


def check_pools(pools: list[str]) -> tuple[str, ...]:
    found = tuple(dict.fromkeys(p.strip() for p in pools if p.strip()))
    bad = [p for p in found if not _POOL.fullmatch(p)]
    if not found or bad:
        raise ConfigError(
            f"give the worker's GPU pools as letters, digits and dashes, e.g. --pool H100,A100-80GB "
            f"(not {', '.join(bad) or 'nothing'})."
        )
    return found


def load(secrets_dir: Path) -> dict[str, IssuedWorker]:
    """Every worker ever issued, by name (none when no worker was issued yet)."""
    path = secrets_dir / REGISTRY
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text())["workers"]
        return {
            name: IssuedWorker(
                name,
                tuple(entry["pools"]),
                str(entry["password"]),
                str(entry["added_at"]),
                entry.get("revoked_at"),
            )
            for name, entry in entries.items()
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"cannot read the worker registry {path} ({type(exc).__name__}); restore it from a backup."
        ) from exc


def credential_file(secrets_dir: Path, name: str) -> Path:
    return secrets_dir / FOLDER / f"{name}.json"


def issue(
    secrets_dir: Path, name: str, pools: list[str], secret: bytes, *, keep: bool = False, operator_nats: bool = False
) -> Path:
    """Issue ``name`` a user for ``pools`` and write its credential file; return the file's path.

    ``keep`` (``kernelrank up``'s own local workers) keeps a live worker's password and takes the pools given;
    otherwise a name issued before is refused, live or revoked. ``operator_nats``: no password, and the file is
    a key file only (the worker logs in with a ``.creds`` or ``.nk`` file its operator made).
    """
    check_name(name)
    pools_ = check_pools(pools)
    workers = load(secrets_dir)
    known = workers.get(name)
    if known is not None and not known.live:
        raise ConfigError(f"worker {name} was revoked on {known.revoked_at}: issue the worker a new name.")
    if known is not None and not keep:
        raise ConfigError(
            f"worker {name} exists already (pools {', '.join(known.pools)}): revoke it first, or choose another name."
        )
    now = datetime.now(UTC).isoformat(timespec="seconds")
    password = "" if operator_nats else known.password if known else secrets.token_urlsafe(32)
    workers[name] = IssuedWorker(name, pools_, password, known.added_at if known else now)
    _save(secrets_dir, workers)
    private_folder(secrets_dir / FOLDER)
    path = credential_file(secrets_dir, name)
    login = {"password": password} if password else {}
    credential = {"user": name, **login, "key": worker_key(secret, name), "pools": pools_}
    write_private(path, json.dumps(credential))
    return path


def revoke(secrets_dir: Path, name: str) -> IssuedWorker:
    """Mark ``name`` revoked and delete its credential file; the caller rewrites and reloads the server's users."""
    workers = load(secrets_dir)
    known = workers.get(name)
    if known is None or not known.live:
        live = ", ".join(sorted(w.name for w in workers.values() if w.live)) or "none"
        raise ConfigError(f"there is no live worker called {name!r} (live workers: {live}).")
    workers[name] = IssuedWorker(
        name, known.pools, known.password, known.added_at, datetime.now(UTC).isoformat(timespec="seconds")
    )
    _save(secrets_dir, workers)
    credential_file(secrets_dir, name).unlink(missing_ok=True)
    return workers[name]


def _save(secrets_dir: Path, workers: dict[str, IssuedWorker]) -> None:
    private_folder(secrets_dir)
    entries = {
        w.name: {"pools": list(w.pools), "password": w.password, "added_at": w.added_at, "revoked_at": w.revoked_at}
        for w in workers.values()
    }
    write_private(secrets_dir / REGISTRY, json.dumps({"workers": entries}, indent=1))
