"""The terminal client: every command of the registry (``core.contracts.registry``) as ``kernelrank WORDS ...``,
and ``login``.

A thin adapter over the HTTP API (``adapters.http_client``) with a personal token (``adapters.credentials`` says
where the URL and the token come from): its parser is built from the registry entry of the command typed, it sends
the request through the entry's route, renders the ``Reply`` (``adapters.terminal``), and for a submission follows
the event stream for live progress per GPU and the final reports. It never talks to NATS. Exit code 0 means the
command (and every run) succeeded.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from adapters.credentials import normal, resolve, save_login
from adapters.http_client import Api, ApiError
from adapters.packing import PackError, file_argument
from adapters.terminal import LiveRows, Screen, error_line, render, status_line
from core.contracts.commands import MODE_ALIASES
from core.contracts.config import Settings
from core.contracts.messages import CommandKind, Reply, Tone, still_coming
from core.contracts.registry import BY_KIND, COMMANDS, SHORT_NAMES, ArgKind, Route, Spec, find

NOT_RUNNING = (
    "kernelrank is not running here: start it with `kernelrank up`, or set KERNELRANK_API_URL to where "
    "it runs and run `kernelrank login`."
)
NO_TOKEN = (
    "This needs your personal token: get one with `/leaderboard token` in Discord or `/kernelrank token` "
    "in Slack (or from an admin), then run `kernelrank login`."
)
# What only a terminal has: options about this machine, not the command
TERMINAL_OPTIONS: dict[str, Callable[[argparse.ArgumentParser], Any]] = {
    "submit": lambda p: p.add_argument("--no-wait", action="store_true", help="return once the submission is queued"),
    "template": lambda p: p.add_argument(
        "--output", "-o", type=Path, default=None, help="write the template to this file"
    ),
    "task": lambda p: p.add_argument("--all", action="store_true", help="print every file, not only their names"),
    "eval-code": lambda p: p.add_argument("--all", action="store_true", help="print every file, not only their names"),
}


def main(command: str, argv: list[str], settings: Settings) -> int:
    if command == "login":
        return _login(_login_parser().parse_args(argv), settings)
    found = find([command, *argv])
    if found is None:
        return _unknown([command, *argv])
    spec, used = found
    args = parser_for(spec).parse_args([command, *argv][used:])
    screen = Screen.of(sys.stdout)
    found_login = resolve(settings)
    if not found_login.url or not found_login.token:
        print(f"kernelrank: {NO_TOKEN if found_login.url else NOT_RUNNING}", file=sys.stderr)
        return 1
    try:
        with Api(found_login.url, found_login.token, settings.request_timeout_s) as api:
            if spec.submission:
                return _submit(api, spec, args, screen)
            values = {arg.name: getattr(args, arg.name) for arg in spec.args}
            for arg in spec.args:  # a file argument goes packed (a folder as a .tar.gz)
                if arg.kind is ArgKind.FILE and values[arg.name] is not None:
                    values[arg.name] = file_argument(values[arg.name])
            route = pick_route(spec, values)
            if missing := [name for name in route.path_params if values.get(name) in (None, "")]:
                named = " and ".join(name.upper() for name in missing)
                print(
                    f"kernelrank: name the {named} for that; `kernelrank {spec.name} --help` shows how.",
                    file=sys.stderr,
                )
                return 2
            if route.method == "POST":  # admin create answers at once, then once its problem's reference ran
                replies = api.call_following(route, values)
                reply = next(replies)
                if not reply.final:
                    print(render(reply, screen.colour, width=screen.width))
                    return follow(replies, reply, screen)
            else:
                reply = api.call(route, values)
    except KeyboardInterrupt:
        print("\nStopped following. Your submission keeps running; `kernelrank mine LEADERBOARD` shows it later.")
        return 130
    except ApiError as exc:
        return _refused(exc, screen.colour)
    except PackError as exc:
        print(f"kernelrank: {exc}", file=sys.stderr)
        return 2
    if args.json:  # the reply's data, for programs: `kernelrank list --json | jq`
        print(json.dumps(reply.data, indent=2, ensure_ascii=False))
        return 0
    listed = spec.name in ("task", "eval-code") and not args.all  # files by name; --all prints them
    hint = f"`kernelrank {' '.join([command, *argv])} --all` prints them." if listed else ""
    print(render(reply, screen.colour, hint, screen.width))
    if getattr(args, "output", None):
        args.output.write_text(reply.data.get("source", ""))
        print(f"Wrote {args.output}.")
    return 0


def parser_for(spec: Spec) -> argparse.ArgumentParser:
    """The command's parser, from its registry entry: required arguments positional, the others options."""
    parser = argparse.ArgumentParser(prog=f"kernelrank {spec.name}", description=spec.about)
    for arg in spec.args:
        options: dict[str, Any] = {"help": arg.help}
        if arg.choices:  # other tools' names for a choice are taken too (popcorn-cli's `--mode leaderboard`)
            options.update(choices=arg.choices, type=lambda given: MODE_ALIASES.get(given.lower(), given))
        if arg.kind is ArgKind.FILE:
            options["type"] = Path
        if arg.is_positional:
            parser.add_argument(arg.name, nargs=None if arg.required else "?", **options)
            continue
        short = [f"-{SHORT_NAMES[arg.name]}"] if arg.name in SHORT_NAMES else []
        flags = [f"--{arg.name}", *(f"--{alias}" for alias in arg.aliases), *short]
        if arg.kind is ArgKind.GPUS:
            options.update(action="append", default=[], help=f"{arg.help}; repeat it, or give a comma list")
        parser.add_argument(*flags, dest=arg.name, **options)
    TERMINAL_OPTIONS.get(spec.name, lambda _: None)(parser)
    if not spec.submission:
        parser.add_argument("--json", action="store_true", help="print the answer's data as JSON, for programs")
    return parser


def pick_route(spec: Spec, args: dict[str, Any]) -> Route:
    """The route whose implied arguments the command's match (``token revoke`` is DELETE), else the first."""
    return next(
        (route for route in spec.routes if route.fixed and all(args.get(k) == v for k, v in route.fixed.items())),
        spec.routes[0],
    )


def usage_lines() -> list[tuple[str, str]]:
    """Each command's usage and what it does, from the registry, for ``kernelrank --help``."""
    return [(_usage(spec), spec.about) for spec in COMMANDS if spec.offered_on("terminal")]


def _usage(spec: Spec) -> str:
    shown = [
        (arg.name.upper() if arg.required else f"[{arg.name.upper()}]") if arg.is_positional else f"[--{arg.name}]"
        for arg in spec.args
    ]
    return " ".join([spec.name, *shown])


def _unknown(words: list[str]) -> int:
    near = [spec for spec in COMMANDS if spec.words[0] == words[0].lower()]
    print(
        f"kernelrank: {' '.join(words[:3])!r} is not a command. "
        + (
            "Did you mean one of these?\n" + "\n".join(f"  kernelrank {_usage(s)}" for s in near)
            if near
            else "`kernelrank --help` lists the commands."
        ),
        file=sys.stderr,
    )
    return 2


def _login_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelrank login", description="Keep your personal token for this client.")
    parser.add_argument(
        "--url",
        default="",
        help="the API's address (default: KERNELRANK_API_URL, or the kernelrank started on this host)",
    )
    return parser


def _submit(api: Api, spec: Spec, args: argparse.Namespace, screen: Screen) -> int:
    """Upload the kernel with the entry's other arguments, then follow its runs (unless ``--no-wait``)."""
    kernel = next(arg for arg in spec.args if arg.kind is ArgKind.FILE)
    path: Path = getattr(args, kernel.name)
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise SystemExit(f"kernelrank: cannot read {path}: {exc.strerror}.") from None
    values = {arg.name: getattr(args, arg.name) for arg in spec.args if arg is not kernel}
    replies = api.submit(spec.routes[0], {kernel.name: (path.name, content)}, values, follow=not args.no_wait)
    accepted = next(replies)
    print(render(accepted, screen.colour, width=screen.width))
    return 0 if args.no_wait else follow(replies, accepted, screen)


def follow(replies: Iterator[Reply], accepted: Reply, screen: Screen) -> int:
    """Show live progress, one row per run (per GPU), until every reply the first answer promised has come (each
    run's final report, or an admin create's outcome)."""
    waiting = still_coming(accepted)
    failed = False
    rows = LiveRows(sys.stdout, screen)
    for reply in replies:
        if reply.in_reply_to not in waiting:
            continue
        if not reply.final:
            rows.update(reply.in_reply_to, status_line(reply, screen.colour, screen.width))
            continue
        rows.finish(reply.in_reply_to, render(reply, screen.colour, width=screen.width))
        failed |= reply.tone is Tone.ERROR
        waiting.discard(reply.in_reply_to)
    return 1 if failed or waiting else 0


def _refused(exc: ApiError, colour: bool) -> int:
    """A refusal of the core is shown like any answer; a transport problem goes to stderr."""
    if exc.code and exc.code != "unavailable":
        print(error_line(str(exc), colour))
    else:
        print(f"kernelrank: {exc}", file=sys.stderr)
    return 1


def _login(args: argparse.Namespace, settings: Settings) -> int:
    url = normal(args.url or resolve(settings).url)
    if not url:
        print("kernelrank login: give the API's address with --url (or set KERNELRANK_API_URL).", file=sys.stderr)
        return 2
    prompt = "Paste your personal token (from `/leaderboard token` in Discord or `/kernelrank token` in Slack): "
    token = (getpass.getpass(prompt) if sys.stdin.isatty() else sys.stdin.readline()).strip()
    if not token:
        print("kernelrank login: no token given; nothing changed.", file=sys.stderr)
        return 2
    try:
        with Api(url, token, settings.request_timeout_s) as api:
            me = api.call(pick_route(BY_KIND[CommandKind.TOKEN], {"action": "whoami"}), {})
    except ApiError as exc:
        print(f"kernelrank login: {exc}", file=sys.stderr)
        return 1
    where = save_login(url, token)
    print(
        f"Signed in to {url} as {me.data.get('display_name', 'you')}; the token is kept in {where} "
        "(readable by you alone)."
    )
    return 0
