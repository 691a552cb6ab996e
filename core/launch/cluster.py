"""``kernelrank cluster-users [FILE]``: the users of a NATS cluster, as the file every node includes.

The embedded server's configuration (``core.contracts.credentials.embedded_server_config``) holds kernelrank's users in
the server's default account. A cluster (``deploy/nats/kernelrank-nats.conf``, docs/deploy.md) holds the same users,
with the same permissions (``core.contracts.roles``), in an account of its own with JetStream on: this writes that
account as ``accounts.conf`` for the nodes to include. Run it on the host that holds ``<home>/secrets`` after
``kernelrank workers add`` or ``revoke``, copy the file to each node, and reload them (``systemctl reload
kernelrank-nats``, deploy/systemd).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.contracts.config import Settings
from core.contracts.credentials import embedded_server_config
from core.contracts.localfiles import write_private

ACCOUNT = "KERNELRANK"


def cluster_accounts(secrets_dir: Path) -> dict[str, Any]:
    """The ``accounts`` block: every role's and live worker's user (made where missing), in one JetStream account."""
    users = json.loads(embedded_server_config(secrets_dir).read_text())["authorization"]["users"]
    return {"accounts": {ACCOUNT: {"jetstream": "enabled", "users": users}}}


def write_accounts(secrets_dir: Path, out: Path) -> Path:
    """Write ``cluster_accounts`` to ``out`` (owner-only: it holds password hashes); ``OSError`` when it cannot."""
    write_private(out, json.dumps(cluster_accounts(secrets_dir), indent=1))
    return out


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="kernelrank cluster-users",
        description="Write the users of a NATS cluster's KERNELRANK account, for every node to include.",
    )
    parser.add_argument("file", nargs="?", type=Path, help="where to write it (default: <home>/secrets/accounts.conf)")
    args = parser.parse_args(argv)
    out = args.file or settings.secrets_dir / "accounts.conf"
    try:
        write_accounts(settings.secrets_dir, out)
    except OSError as exc:
        print(
            f"kernelrank cluster-users: cannot write {out} ({exc.strerror}); choose a folder you can write.",
            file=sys.stderr,
        )
        return 1
    print(
        f"Wrote {out}: copy it beside kernelrank-nats.conf on each node, then `systemctl reload kernelrank-nats` there."
    )
    return 0
