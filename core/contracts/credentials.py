"""Bus credentials: made for the embedded nats-server by ``kernelrank up``, and found by each process for its role.

Files, all under ``<home>/secrets/`` (a 0700 folder; every file 0600, written through ``core.contracts.localfiles``):

====================  ===================================================================================
``<role>.json``       ``{"user": ..., "password": ...}``: one role's NATS user, made once, kept across starts
                      (every role but the worker: each worker has its own, ``core.contracts.issued_workers``)
``workers.json``,     the issued workers and their credential files ``{"user", "password", "key", "pools"}``
``workers/<n>.json``  (``core.contracts.issued_workers``); an operator-mode worker's is its key file
                      ``{"user", "key", "pools"}``, no password (its NATS user is the operator's)
``nats.conf``         the embedded server's configuration: each role's and each live worker's user with its
                      bcrypt-hashed password and its permissions (``core.contracts.roles``); rewritten at every
                      start and by ``kernelrank workers add/revoke``
``result.key``        the core's secret from which each run's result key is derived (``core.contracts.signing``)
====================  ===================================================================================

A process finds its credentials (``for_role``), first match wins:

1. ``KERNELRANK_NATS_USER`` and ``KERNELRANK_NATS_PASSWORD``;
2. ``KERNELRANK_NATS_CREDENTIALS``: a file, read by its suffix (``.json`` as above, ``.creds`` a NATS
   credentials file with a JWT and nkey seed, ``.nk`` an nkey seed file), or a folder holding
   ``<role>.json``, ``<role>.creds`` or ``<role>.nk``;
3. ``<home>/secrets/<role>.json``, as ``kernelrank up`` leaves it;
4. none: the process connects without credentials (a NATS that asks for none, such as the tests' own).

A worker's signing key and pools come with its ``.json`` file; a worker that logs in otherwise (a ``.creds`` or
``.nk`` file on an operator-mode NATS, or ``KERNELRANK_NATS_USER``) reads them from ``KERNELRANK_WORKER_KEY_FILE``,
the key file ``kernelrank workers add NAME --pool GPU --operator-nats`` writes (``with_key_file``); its ``user``
is the worker's name.

``.creds`` and ``.nk`` files need the ``nkeys`` package (``pip install nkeys``); nats-py reads them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.contracts import subjects
from core.contracts.config import ConfigError, Settings
from core.contracts.issued_workers import load
from core.contracts.localfiles import create_private, private_folder, write_private
from core.contracts.roles import PERMISSIONS, Role, WorkerUser, authorization, inbox_prefix, user_name

SUFFIXES = (".json", ".creds", ".nk")
# The passwords are 256 random bits: no hashing cost adds to that, and every connection pays for the check.
BCRYPT_ROUNDS = 8
KEY_FILE_SETTING = "KERNELRANK_WORKER_KEY_FILE"
_HEX_KEY = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class BusCredentials:
    """How one process proves its role to NATS; ``connect_options`` feeds nats-py's ``connect``."""

    role: Role
    user: str = ""
    password: str = field(default="", repr=False)
    creds_file: Path | None = None
    nkey_file: Path | None = None
    key: str = field(default="", repr=False)  # a worker's signing key (core.contracts.signing.worker_key)
    pools: tuple[str, ...] = ()  # the GPU pools a worker was issued for (none said: any)
    name: str = ""  # a worker's name where its NATS user is not it (read from its key file)

    @property
    def worker_name(self) -> str:
        """The worker's name: its key file's, else its NATS user (empty on an open bus)."""
        return self.name or self.user

    @property
    def authenticated(self) -> bool:
        return bool(self.user or self.creds_file or self.nkey_file)

    @property
    def may_manage(self) -> bool:
        """Whether this process may create streams and buckets: the core, or anyone on an open server."""
        return self.role is Role.CORE or not self.authenticated

    def connect_options(self) -> dict[str, Any]:
        prefix = subjects.worker_inbox(self.worker_name) if self.role is Role.WORKER else inbox_prefix(self.role)
        options: dict[str, Any] = {"inbox_prefix": prefix}
        if self.user:
            options.update(user=self.user, password=self.password)
        if self.creds_file:
            options["user_credentials"] = str(self.creds_file)
        if self.nkey_file:
            options["nkeys_seed"] = str(self.nkey_file)
        return options


def for_role(settings: Settings, role: Role) -> BusCredentials:
    """This process's credentials as ``role``; without any, only the role's inbox prefix (see the module doc)."""
    return _keyed(_login(settings, role), settings)


def _login(settings: Settings, role: Role) -> BusCredentials:
    if settings.nats_user:
        return BusCredentials(role, user=settings.nats_user, password=settings.nats_password)
    given = settings.nats_credentials
    if given is not None:
        found = _role_file(given, role) if given.is_dir() else given
        if found is None or not found.is_file():
            raise ConfigError(
                f"KERNELRANK_NATS_CREDENTIALS names {given}, which holds no credentials for the "
                f"{role.value} role (expected {role.value}.json, .creds or .nk)."
            )
        return read(found, role)
    default = settings.secrets_dir / f"{role.value}.json"
    return read(default, role) if default.is_file() else BusCredentials(role)


def _keyed(credentials: BusCredentials, settings: Settings) -> BusCredentials:
    if settings.worker_key_file is None or credentials.role is not Role.WORKER:
        return credentials
    return with_key_file(credentials, settings.worker_key_file)


def with_key_file(credentials: BusCredentials, path: Path) -> BusCredentials:
    """A worker's ``credentials`` with the name, signing key and pools of its key file
    (``KERNELRANK_WORKER_KEY_FILE``); ``ConfigError``, one sentence naming the setting, when it cannot be used."""
    if credentials.key:
        raise ConfigError(
            f"{KEY_FILE_SETTING} is for workers that log in with a .creds or .nk file, but this worker's "
            f"credential file carries its signing key already: unset {KEY_FILE_SETTING}."
        )
    if not credentials.authenticated:
        raise ConfigError(
            f"{KEY_FILE_SETTING} is set, but this worker has no NATS credentials to log in with: set "
            "KERNELRANK_NATS_CREDENTIALS to its .creds or .nk file."
        )
    issued = "the key file `kernelrank workers add NAME --pool GPU --operator-nats` wrote on the core's host"
    try:
        name, key, pools = _key_file(path)
    except FileNotFoundError:
        raise ConfigError(f"{KEY_FILE_SETTING} names {path}, which does not exist: copy {issued} there.") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise ConfigError(
            f"{KEY_FILE_SETTING} names {path}, which cannot serve as a worker key file ({reason}): give it "
            f'{issued}, {{"user", "key", "pools"}}.'
        ) from exc
    if credentials.user and credentials.user != name:
        raise ConfigError(
            f"{KEY_FILE_SETTING} is worker {name}'s key file, but this worker logs in to NATS as "
            f"{credentials.user}: give it the key file issued to {credentials.user}."
        )
    return dataclasses.replace(credentials, name=name, key=key, pools=pools)


def _key_file(path: Path) -> tuple[str, str, tuple[str, ...]]:
    """A worker key file's name, signing key and pools; ``ValueError`` saying what is wrong with it."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError:
        raise ValueError("it is not JSON") from None
    if not isinstance(data, dict):
        raise ValueError("it is not a JSON object")
    name, key, pools = data.get("user"), data.get("key"), data.get("pools")
    if not isinstance(name, str) or not name:
        raise ValueError("it names no worker")
    if not isinstance(key, str) or not _HEX_KEY.fullmatch(key):
        raise ValueError("it holds no signing key")
    if not isinstance(pools, list) or not pools or not all(isinstance(p, str) and p for p in pools):
        raise ValueError("it lists no GPU pools")
    return name, key, tuple(pools)


def read(path: Path, role: Role) -> BusCredentials:
    """A credentials file, by its suffix; ``ConfigError`` names the file when it cannot be used."""
    if path.suffix == ".creds":
        return BusCredentials(role, creds_file=path)
    if path.suffix == ".nk":
        return BusCredentials(role, nkey_file=path)
    try:
        data = json.loads(path.read_text())
        return BusCredentials(
            role,
            user=str(data["user"]),
            password=str(data["password"]),
            key=str(data.get("key", "")),
            pools=tuple(str(p) for p in data.get("pools", ())),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        hint = f" (a worker key file without a password goes in {KEY_FILE_SETTING})" if _is_key_file(path) else ""
        raise ConfigError(
            f"cannot read NATS credentials from {path} ({type(exc).__name__}); it should hold "
            f'{{"user": ..., "password": ...}}{hint}.'
        ) from exc


def _is_key_file(path: Path) -> bool:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text())
        return isinstance(data, dict) and "key" in data and "password" not in data
    return False


def _role_file(folder: Path, role: Role) -> Path | None:
    return next(
        (folder / f"{role.value}{suffix}" for suffix in SUFFIXES if (folder / f"{role.value}{suffix}").is_file()), None
    )


def embedded_server_config(secrets_dir: Path) -> Path:
    """Make (or keep) each role's credentials and write the server's configuration, with a user for each live
    issued worker; return its path."""
    import bcrypt  # only ``kernelrank up`` and ``kernelrank workers`` hash passwords

    def hashed(password: str) -> str:
        return bcrypt.hashpw(password.encode(), bcrypt.gensalt(BCRYPT_ROUNDS)).decode()

    private_folder(secrets_dir)
    hashes = {}
    for role in PERMISSIONS:
        path = secrets_dir / f"{role.value}.json"
        if not path.is_file():
            create_private(path, json.dumps({"user": user_name(role), "password": secrets.token_urlsafe(32)}))
        hashes[role] = hashed(read(path, role).password)
    # an operator-mode worker has no password: its NATS user lives in the operator's own server configuration
    issued = [w for w in load(secrets_dir).values() if w.live and not w.operator_nats]
    workers = [WorkerUser(w.name, hashed(w.password), w.pools) for w in issued]
    config = secrets_dir / "nats.conf"
    write_private(config, json.dumps({"authorization": authorization(hashes, workers)}, indent=1))
    return config


def result_secret(settings: Settings) -> bytes:
    """The core's result-signing secret: ``KERNELRANK_RESULT_SECRET``, else ``result.key`` (made on first use).

    Every core replica must share it: set the variable where cores run on several hosts.
    """
    if settings.result_secret:
        return settings.result_secret.encode()
    path = settings.secrets_dir / "result.key"
    if not path.is_file():
        private_folder(settings.secrets_dir)
        with contextlib.suppress(FileExistsError):  # another core made it meanwhile: use theirs
            create_private(path, secrets.token_hex(32))
    return path.read_text().strip().encode()
