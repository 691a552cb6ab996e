"""The ``kernelrank`` command: one entry point, one subcommand per process or client action.

This module is the composition root. Each subcommand's implementation is imported only when it runs,
so the terminal client never loads the database driver and the core never loads torch.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import signal
import sys
import textwrap

from core.contracts.config import ConfigError, Settings, load_settings, user_config_dir
from core.contracts.registry import first_words
from core.contracts.version import __version__

CLIENT_COMMANDS = (*first_words(), "login")  # the registry's commands, sent by the terminal client


# The commands that start a process or act on this host, with their usage and what they do: with the registry's
# commands (``adapters.cli.usage_lines``) they make the top-level help
PROCESSES = {
    "up": ("up", "start NATS, the core, the API and local workers (Ctrl-C stops everything)"),
    "core": ("core", "run the core service alone (needs KERNELRANK_NATS_URL)"),
    "worker": ("worker --gpu POOL", "run a worker for a GPU pool (--backend local|modal|github|fake, --concurrency N)"),
    "workers": ("workers add|revoke|list", "issue a worker its own bus credentials, or revoke them"),
    "restore": (
        "restore PATH",
        "put a backup (`kernelrank admin backup`) in the place of the database; stop the core first",
    ),
    "cluster-users": (
        "cluster-users [FILE]",
        "write the users of a NATS cluster's account, for every node (docs/deploy.md)",
    ),
    "modal": ("modal deploy|check|warm", "put the GPU runners on Modal, check each GPU type, fill the compile caches"),
    "discord": ("discord", "run the Discord bot (needs DISCORD_TOKEN; --sync-global registers its commands)"),
    "slack": ("slack", "run the Slack adapter: Socket Mode, or HTTP with --http --port P (docs/slack.md)"),
    "api": ("api", "run the HTTP API for the terminal client and the web (KERNELRANK_API_HOST, _PORT)"),
}
# The base install is the terminal client: what the other commands need comes with these extras (pyproject.toml)
EXTRAS = {"worker": "server,harness", "discord": "discord", "slack": "slack", "modal": "modal"}
OUR_PACKAGES = ("adapters", "core", "harness", "runners", "storage")
USAGE_COLUMN = 28  # a longer usage gets a line of its own
LOCAL = {
    "login": ("login [--url URL]", "store your personal token for this client"),
    "eval": ("eval FILE --problem DIR", "evaluate locally without the service (--mode, --json)"),
    "status": ("status [--json]", "is kernelrank up: the API, the core, versions, each GPU pool's workers"),
    "help": ("help [COMMAND]", "this text, or a command's options"),
    "completion": ("completion bash|zsh|fish", 'a shell completion script: eval "$(kernelrank completion bash)"'),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    log_format, argv = _log_format(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"kernelrank {__version__}")
        return 0
    command, rest = argv[0], argv[1:]
    if command == "help":
        return _help(rest)
    if command == "completion":
        from adapters.completion import main as completion

        return completion(rest, [*PROCESSES, *LOCAL])
    if command == "eval":
        from runners.eval_command import main as evaluate

        return evaluate(rest)
    try:
        settings = load_settings(user_config=user_config_dir())
    except ConfigError as exc:
        print(f"kernelrank: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings, quiet=command in (*CLIENT_COMMANDS, "modal", "status"), json_lines=log_format == "json")
    try:
        return _run(command, rest, settings)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in OUR_PACKAGES:
            raise
        extra = EXTRAS.get(command, "server")
        print(
            f"kernelrank {command}: this install lacks {exc.name}, a part of the server's: "
            f"pip install 'kernelrank[{extra}]' (or `make up` in a clone), then try again.",
            file=sys.stderr,
        )
        return 2


def _run(command: str, rest: list[str], settings: Settings) -> int:
    if command == "status":
        from adapters.status import main as show_status

        return show_status(rest, settings)
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
    print(f"kernelrank: {command!r} is not a command; `kernelrank help` lists them.", file=sys.stderr)
    return 2


def _usage() -> str:
    """The top-level help, from the tables of commands: the registry's and this module's."""
    from adapters.cli import usage_lines

    client = usage_lines()
    width = min(USAGE_COLUMN, max(len(usage) for usage, _ in [*client, *PROCESSES.values(), *LOCAL.values()]))
    columns = max(60, shutil.get_terminal_size().columns - 1)
    beside = textwrap.TextWrapper(width=columns, subsequent_indent=" " * (width + 4))
    below = textwrap.TextWrapper(width=columns, initial_indent=" " * 4, subsequent_indent=" " * 4)

    def shown(rows) -> list[str]:
        """A usage and what it does on one line where they fit, else the usage on a line of its own."""
        out = []
        for usage, about in rows:
            if len(usage) > width:
                out += [f"  {usage}", *below.wrap(about)]
            else:
                out += beside.wrap(f"  {usage.ljust(width)}  {about}")
        return out

    return "\n".join(
        [
            "usage: kernelrank COMMAND [options]   (kernelrank --version; --log-format json for JSON log lines)",
            "",
            "start the system",
            *shown(PROCESSES.values()),
            "",
            "use it (the terminal client; every command is also in Discord, Slack and the API)",
            *shown(client),
            *shown(LOCAL.values()),
            "",
            "`kernelrank help COMMAND` (or COMMAND --help) shows a command's options.",
        ]
    )


def _help(words: list[str]) -> int:
    """``help``: the top-level usage; ``help COMMAND ...``: that command's own help."""
    if not words:
        print(_usage())
        return 0
    if words[0] in ("core", "api"):  # they take no options
        print(f"usage: kernelrank {PROCESSES[words[0]][0]}\n\n{PROCESSES[words[0]][1]}")
        return 0
    if words[0] in (*CLIENT_COMMANDS, *PROCESSES, *LOCAL) and words[0] not in ("help", "completion"):
        return main([*words, "--help"])
    print(f"kernelrank: {words[0]!r} is not a command; `kernelrank help` lists them.", file=sys.stderr)
    return 2


def _log_format(argv: list[str]) -> tuple[str, list[str]]:
    """``--log-format text|json`` anywhere before the command's own words, taken out of them."""
    if "--log-format" in argv[:1] and len(argv) > 1:
        return argv[1], argv[2:]
    given = next((word for word in argv[:1] if word.startswith("--log-format=")), None)
    if given:
        return given.partition("=")[2], argv[1:]
    return "text", argv


def configure_logging(settings: Settings, quiet: bool, json_lines: bool = False) -> None:
    """Log lines on stderr: text for people, or one JSON object a line (``--log-format json``, or
    ``KERNELRANK_LOG_FORMAT=json``) for a log collector."""
    level = logging.WARNING if quiet else getattr(logging, settings.log_level.upper(), logging.INFO)
    handler = logging.StreamHandler()
    if json_lines or os.environ.get("KERNELRANK_LOG_FORMAT", "").lower() == "json":
        from core.launch.jsonlog import JsonFormatter

        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


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
