"""The ``kernelrank`` command: one entry point, one subcommand per process or client action.

This module is the composition root. Each subcommand's implementation is imported only when it runs,
so the terminal client never loads the database driver and the core never loads torch.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from core.contracts.config import ConfigError, Settings, load_settings
from core.contracts.registry import first_words

CLIENT_COMMANDS = (*first_words(), "login")  # the registry's commands, sent by the terminal client


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command == "eval":
        from runners.eval_command import main as evaluate

        return evaluate(rest)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"kernelrank: {exc}", file=sys.stderr)
        return 2
    _configure_logging(settings, quiet=command in (*CLIENT_COMMANDS, "modal"))
    if command in CLIENT_COMMANDS:
        from adapters.cli import main as client

        return client(command, rest, settings)
    if command == "up":
        from core.launch.up import main as up

        return up(rest, settings)
    if command == "workers":
        from core.launch.workers import main as workers

        return workers(rest, settings)
    if command == "restore":
        from core.launch.restore import main as restore

        return restore(rest, settings)
    if command == "cluster-users":
        from core.launch.cluster import main as cluster_users

        return cluster_users(rest, settings)
    if command == "core":
        return _serve(_core(settings))
    if command == "api":
        return _serve(_api(settings))
    if command == "worker":
        return _serve(_worker(rest, settings))
    if command == "modal":
        from runners.modal_cli import main as modal

        return modal(rest, settings)
    if command == "discord":
        return _serve(_discord(rest, settings))
    if command == "slack":
        return _slack(rest, settings)
    print(f"kernelrank: unknown command {command!r}.\n\n{_usage()}", file=sys.stderr)
    return 2


def _usage() -> str:
    from adapters.cli import usage_lines

    return (
        """usage: kernelrank COMMAND [options]

start the system
  up                      start NATS, the core, local workers (Ctrl-C stops everything)
  core                    run the core service alone (needs KERNELRANK_NATS_URL)
  worker --gpu POOL       run a worker for a GPU pool (--backend local|modal|github|fake, --concurrency N)
  workers add|revoke|list issue a worker its own bus credentials, or revoke them (on the host of <home>/secrets)
  restore PATH            put a backup (`kernelrank admin backup`) in the place of the database; stop the core first
  cluster-users [FILE]    write the users of a NATS cluster's account, for every node to include (docs/deploy.md)
  modal deploy|check|warm put the GPU runners on Modal, check each GPU type, fill the compile caches
  discord                 run the Discord bot (needs DISCORD_TOKEN; --sync-global registers its commands)
  slack                   run the Slack adapter: Socket Mode, or HTTP with --http --port P (docs/slack.md)
  api                     run the HTTP API for the terminal client and the web (KERNELRANK_API_HOST, _PORT)

use it (the terminal client; every command is also in Discord, Slack and the API)
"""
        + "\n".join(usage_lines())
        + """
  login                   store your personal token for this client (--url URL)
  eval FILE --problem DIR evaluate locally without the service (--mode, --json)

Each command takes --help."""
    )


def _configure_logging(settings: Settings, quiet: bool) -> None:
    level = logging.WARNING if quiet else getattr(logging, settings.log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _serve(main_coro_factory) -> int:
    """Run a long-lived service until SIGINT/SIGTERM, then let it shut down cleanly."""
    from core.contracts.bus import BusError  # every service loads the bus; the terminal client does not come here

    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await main_coro_factory(stop)

    try:
        asyncio.run(runner())
    except (ConnectionError, BusError) as exc:  # one sentence saying what to do; the detail is in the log
        logging.getLogger(__name__).debug("stopped by %r", exc, exc_info=True)
        print(f"kernelrank: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:
        print(f"kernelrank: {exc}", file=sys.stderr)
        return 2
    return 0


def _core(settings: Settings):
    async def start(stop: asyncio.Event) -> None:
        from core.contracts.gpus import local_pools
        from core.service.bootstrap import run_core

        url = _nats_url(settings)
        pools = list(dict.fromkeys([*settings.gpus, *local_pools()]))
        await run_core(settings, url, pools, stop)

    return start


def _api(settings: Settings):
    async def start(stop: asyncio.Event) -> None:
        from adapters.api.serve import run_api

        await run_api(settings, _nats_url(settings), stop)

    return start


def _worker(argv: list[str], settings: Settings):
    parser = argparse.ArgumentParser(prog="kernelrank worker", description="Run jobs for one GPU pool.")
    parser.add_argument("--gpu", required=True, help="pool name, e.g. H100 or CPU")
    parser.add_argument(
        "--backend",
        default="local",
        choices=("local", "modal", "github", "fake"),
        help="where jobs run: this host (local), Modal, GitHub self-hosted runners, or nowhere (fake)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="jobs at once (default: KERNELRANK_POOL_CONCURRENCY for the pool, else KERNELRANK_WORKER_CONCURRENCY)",
    )
    args = parser.parse_args(argv)

    async def start(stop: asyncio.Event) -> None:
        from runners.worker import run_worker

        await run_worker(_nats_url(settings), args.gpu, args.backend, settings, args.concurrency, stop=stop)

    return start


def _discord(argv: list[str], settings: Settings):
    parser = argparse.ArgumentParser(prog="kernelrank discord", description="Run the Discord bot.")
    parser.add_argument(
        "--sync-global",
        action="store_true",
        help="register the slash commands in every server the bot is in, then exit",
    )
    args = parser.parse_args(argv)

    async def start(stop: asyncio.Event) -> None:
        from adapters.discord.app import run_discord, sync_global

        if args.sync_global:
            print(f"Registered {await sync_global(settings)} commands globally (they can take an hour to show).")
            return
        await run_discord(settings, _nats_url(settings), stop)

    return start


def _slack(argv: list[str], settings: Settings) -> int:
    try:
        from adapters.slack.run import prepare

        serve = prepare(argv, settings)
    except ConfigError as exc:
        print(f"kernelrank slack: {exc}", file=sys.stderr)
        return 2
    return _serve(serve)


def _nats_url(settings: Settings) -> str:
    if not settings.nats_url:
        raise ConnectionError(
            "KERNELRANK_NATS_URL is not set: start everything with `kernelrank up`, "
            "or point this process at a running NATS."
        )
    return settings.nats_url


if __name__ == "__main__":
    sys.exit(main())
