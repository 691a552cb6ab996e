"""``kernelrank status``: is kernelrank up, as this client sees it: the API, the core behind it, the versions, and
each GPU pool's workers (those whose heartbeats the core has) with what waits and runs there.

The API and the core come from ``/v1/health`` (no token needed); the pools from the ``queue`` command, which
needs the personal token. Exit code 0 when the API and the core answer.
"""

from __future__ import annotations

import json
import sys

from adapters.credentials import resolve
from adapters.http_client import Api, ApiError
from adapters.terminal import Screen, render
from core.contracts.config import Settings
from core.contracts.messages import CommandKind, Platform, Reply, ReplyTo, Tone
from core.contracts.registry import BY_KIND
from core.contracts.reply_parts import status, table
from core.contracts.version import __version__


def main(argv: list[str], settings: Settings) -> int:
    if argv not in ([], ["--json"]):
        asked = argv in (["-h"], ["--help"])
        usage = "usage: kernelrank status [--json]\n\n" + __doc__.split("\n\n")[0]
        print(usage, file=sys.stdout if asked else sys.stderr)
        return 0 if asked else 2
    found = resolve(settings)
    if not found.url:
        print("kernelrank status: no kernelrank found: start one with `kernelrank up`, or set KERNELRANK_API_URL.")
        return 1
    pools: dict = {}
    with Api(found.url, found.token, settings.request_timeout_s) as api:
        try:
            health = api.health()
        except ApiError as exc:
            health = {"api": "unreachable", "core": "unknown", "error": str(exc)}
        if found.token and health.get("core") == "ok":
            try:
                pools = api.call(BY_KIND[CommandKind.QUEUE].routes[0], {}).data.get("pools", {})
            except ApiError:
                pools = {}
    up = health.get("api") == "ok" and health.get("core") == "ok"
    if argv == ["--json"]:
        print(json.dumps({**health, "url": found.url, "client_version": __version__, "pools": pools}, indent=2))
        return 0 if up else 1
    screen = Screen.of(sys.stdout)
    print(render(_report(found.url, health, pools, bool(found.token)), screen.colour, width=screen.width))
    return 0 if up else 1


def _report(url: str, health: dict, pools: dict, signed_in: bool) -> Reply:
    version = health.get("version")
    parts = [
        status(f"API at {url}: {health.get('api')}", Tone.SUCCESS if health.get("api") == "ok" else Tone.ERROR),
        status(f"core: {health.get('core')}", Tone.SUCCESS if health.get("core") == "ok" else Tone.ERROR),
        status(
            f"server {version or 'unknown'}, this client {__version__}",
            Tone.INFO if version in (None, __version__) else Tone.WARNING,
        ),
    ]
    if health.get("error"):
        parts.append(status(health["error"], Tone.ERROR))
    if pools:
        rows = [
            [gpu, p.get("workers", 0), p.get("capacity", 0), p.get("waiting", 0), p.get("running", 0)]
            for gpu, p in sorted(pools.items())
        ]
        parts.append(table(["GPU", "workers", "at once", "waiting", "running"], rows))
        idle = [gpu for gpu, p in pools.items() if not p.get("workers")]
        if idle:
            parts.append(status(f"no worker reports for {', '.join(sorted(idle))}", Tone.WARNING))
    elif not signed_in:
        parts.append(status("sign in (`kernelrank login`) to see the GPU pools and their workers", Tone.INFO))
    return Reply(reply_to=ReplyTo(Platform.CLI), title="kernelrank status", parts=parts)
