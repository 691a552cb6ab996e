"""``kernelrank workers add|revoke|list``: issue and revoke workers' bus credentials, on the host that holds
``<home>/secrets``.

Not a bus command (it is not in the command registry): it needs the secrets folder, as ``kernelrank up`` does,
and no core. Each change rewrites the server's configuration (``<home>/secrets/nats.conf``) and makes a running
embedded nats-server reread it, so a new worker can connect at once and a revoked one is disconnected at once.

``add --operator-nats`` issues a worker for an operator-mode NATS, whose users the operator's own tooling (``nsc``)
makes: kernelrank writes only its key file (name, signing key, pools); the worker logs in with its ``.creds``
file and signs with the key file (``KERNELRANK_WORKER_KEY_FILE``). Revoking it makes the core drop its reports
(``core.service.worker_reports``); its NATS user is revoked with that same tooling.
"""

from __future__ import annotations

import argparse
import sys

from core.contracts import issued_workers
from core.contracts.config import ConfigError, Settings
from core.contracts.credentials import embedded_server_config, result_secret
from core.launch.natsserver import NatsServerError, reload_config


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(prog="kernelrank workers", description="Issue and revoke workers' credentials.")
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="issue a worker its own credential file")
    add.add_argument("name", help="the worker's name, also its NATS user (letters, digits, dashes)")
    add.add_argument("--pool", required=True, help="the GPU pools it serves, comma-separated: H100,A100-80GB")
    add.add_argument(
        "--operator-nats",
        action="store_true",
        help="for an operator-mode NATS: write only its key file (name, signing key, pools), no password; its NATS "
        "user (.creds) comes from your own tooling",
    )
    revoke = actions.add_parser("revoke", help="revoke a worker: it is disconnected and can never connect again")
    revoke.add_argument("name")
    actions.add_parser("list", help="every worker issued, live or revoked")
    args = parser.parse_args(argv)
    try:
        if args.action == "list":
            _list(settings)
        elif args.action == "add":
            _add(settings, args.name, args.pool, operator_nats=args.operator_nats)
        else:
            revoked = issued_workers.revoke(settings.secrets_dir, args.name)
            print(f"Revoked worker {args.name}; its credential file is deleted and its name can't be issued again.")
            if revoked.operator_nats:
                print(
                    "The core drops its reports from now on; revoke its NATS user with your operator's tooling too "
                    f"(nsc revocations add-user --name {args.name}, then push the account), or it can still pull "
                    f"and acknowledge jobs of {','.join(revoked.pools)}."
                )
            else:
                print(_apply(settings))
    except ConfigError as exc:
        print(f"kernelrank workers: {exc}", file=sys.stderr)
        return 2
    return 0


def _add(settings: Settings, name: str, pool: str, *, operator_nats: bool) -> None:
    pools = issued_workers.check_pools(pool.split(","))
    secret = result_secret(settings)
    path = issued_workers.issue(settings.secrets_dir, name, list(pools), secret, operator_nats=operator_nats)
    pool, first = ",".join(pools), pools[0]
    if not operator_nats:
        print(f"Issued worker {name} for {pool}: its credential file is {path}.")
        print(_apply(settings))
        print(
            "Hand the file over like a password (it holds the worker's password and signing key), then on the "
            f"worker's host: KERNELRANK_NATS_CREDENTIALS=/path/to/{path.name} KERNELRANK_NATS_URL=... "
            f"kernelrank worker --gpu {first}"
        )
        return
    print(f"Issued worker {name} for {pool} on an operator-mode NATS: its key file is {path}.")
    print(
        f"Make its NATS user with your operator's tooling (named {name}, with the permissions of "
        f"core.contracts.roles.worker_permissions({name!r}, {list(pools)!r})) and hand over its .creds file "
        "and this key file like passwords (the key file holds its signing key); then on the worker's host: "
        f"KERNELRANK_NATS_CREDENTIALS=/path/to/{name}.creds KERNELRANK_WORKER_KEY_FILE=/path/to/{path.name} "
        f"KERNELRANK_NATS_URL=... kernelrank worker --gpu {first}"
    )


def _apply(settings: Settings) -> str:
    """Rewrite the server's users and have a running embedded server reread them; say what happened."""
    config = embedded_server_config(settings.secrets_dir)
    try:
        reloaded = reload_config(settings.home / "run")
    except NatsServerError as exc:
        return f"The change is saved, but {exc}."
    if reloaded:
        return "The running nats-server has the change now."
    return (
        f"No embedded nats-server runs here: `kernelrank up` starts with the change; a NATS of your own needs "
        f"the users in {config}."
    )


def _list(settings: Settings) -> None:
    workers = sorted(issued_workers.load(settings.secrets_dir).values(), key=lambda w: w.name)
    if not workers:
        print("No worker is issued yet: `kernelrank workers add NAME --pool GPU`.")
        return
    for w in workers:
        state = f"revoked {w.revoked_at}" if w.revoked_at else "live"
        state += ", operator-mode NATS" if w.operator_nats else ""
        print(f"{w.name:24} {','.join(w.pools):20} added {w.added_at}  {state}")
