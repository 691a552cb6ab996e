"""The terminal client: ``kernelrank submit|list|show|mine|history|task|template|submission|queue|stats``, ``token``,
``admin token issue NAME`` and ``login``.

A thin adapter over the HTTP API (``adapters.http_client``) with a personal token (``adapters.credentials`` says
where the URL and the token come from): it sends the request, renders the ``Reply`` (``adapters.terminal``), and
for a submission follows the event stream for live progress per GPU and the final reports. It never talks to
NATS. Exit code 0 means the command (and every run) succeeded.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Iterator
from pathlib import Path

from adapters.credentials import normal, resolve, save_login
from adapters.http_client import Api, ApiError, path
from adapters.terminal import error_line, render, status_line
from core.contracts.commands import MODES, TEMPLATE_LANGUAGES
from core.contracts.config import Settings
from core.contracts.messages import Reply, Tone

QUERIES = ("list", "show", "mine", "history", "task", "template", "submission", "queue", "stats", "token", "admin")
NOT_RUNNING = ("kernelrank is not running here: start it with `kernelrank up`, or set KERNELRANK_API_URL to where "
               "it runs and run `kernelrank login`.")
NO_TOKEN = ("This needs your personal token: get one with `/leaderboard token` in Discord or `/kernelrank token` "
            "in Slack (or from an admin), then run `kernelrank login`.")


def main(command: str, argv: list[str], settings: Settings) -> int:
    args = _parser(command).parse_args(argv)
    colour = sys.stdout.isatty()
    if command == "login":
        return _login(args, settings)
    found = resolve(settings)
    if not found.url or not found.token:
        print(f"kernelrank: {NO_TOKEN if found.url else NOT_RUNNING}", file=sys.stderr)
        return 1
    try:
        with Api(found.url, found.token, settings.request_timeout_s) as api:
            if command == "submit":
                return _submit(api, args, colour)
            reply = _ask(api, command, args)
    except KeyboardInterrupt:
        print("\nStopped following. Your submission keeps running; `kernelrank mine LEADERBOARD` shows it later.")
        return 130
    except ApiError as exc:
        return _refused(exc, colour)
    print(render(reply, colour))
    if command == "template" and args.output:
        args.output.write_text(reply.data.get("source", ""))
        print(f"Wrote {args.output}.")
    return 0


def _parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"kernelrank {command}")
    if command == "submit":
        parser.add_argument("file", type=Path)
        parser.add_argument("--leaderboard", "-l", default="")
        parser.add_argument("--gpu", "-g", action="append", default=[], help="repeat for several GPUs")
        parser.add_argument("--mode", "-m", default="", choices=("", *MODES))
        parser.add_argument("--no-wait", action="store_true", help="return once the submission is queued")
    elif command in ("show", "mine", "history", "task", "template"):
        parser.add_argument("leaderboard")
        if command in ("show", "mine", "history"):
            parser.add_argument("--gpu", "-g", default=None)
        if command == "history":
            parser.add_argument("--user", "-u", default=None,
                                help="someone else's progress (scores only): discord:ID, slack:ID or their name")
        if command == "template":
            parser.add_argument("--lang", default=None, choices=TEMPLATE_LANGUAGES)
            parser.add_argument("--output", "-o", type=Path, default=None, help="write the template to this file")
    elif command == "submission":
        parser.add_argument("id")
    elif command == "token":
        parser.add_argument("action", nargs="?", default="list", choices=("list", "new", "revoke"),
                            help="list your tokens (default), make a new one, or revoke one by its prefix")
        parser.add_argument("prefix", nargs="?", default="")
    elif command == "admin":
        parser.add_argument("what", choices=("token",))
        parser.add_argument("action", choices=("issue",))
        parser.add_argument("name", help="the person the token is for")
    elif command == "login":
        parser.add_argument("--url", default="", help="the API's address (default: KERNELRANK_API_URL, or the "
                                                       "kernelrank started on this host)")
    return parser


def _ask(api: Api, command: str, args: argparse.Namespace) -> Reply:
    if command == "list":
        return api.get(path("leaderboards"))
    if command in ("queue", "stats"):
        return api.get(path(command))
    if command == "submission":
        return api.get(path("submissions", args.id))
    if command == "token":
        if args.action == "new":
            return api.post(path("tokens"))
        if args.action == "revoke":
            return api.delete(path("tokens", args.prefix))
        return api.get(path("tokens"))
    if command == "admin":
        return api.post(path("admin", "tokens"), {"name": args.name})
    if command == "show":
        return api.get(path("leaderboards", args.leaderboard), gpu=args.gpu)
    options = {"mine": {"gpu": args.gpu} if command == "mine" else {},
               "history": {"gpu": args.gpu, "user": args.user} if command == "history" else {},
               "template": {"lang": args.lang} if command == "template" else {}}.get(command, {})
    return api.get(path("leaderboards", args.leaderboard, command), **options)


def _submit(api: Api, args: argparse.Namespace, colour: bool) -> int:
    try:
        content = args.file.read_bytes()
    except OSError as exc:
        raise SystemExit(f"kernelrank: cannot read {args.file}: {exc.strerror}.") from None
    replies = api.submit(args.file.name, content, leaderboard=args.leaderboard, gpus=args.gpu, mode=args.mode,
                         follow=not args.no_wait)
    accepted = next(replies)
    print(render(accepted, colour))
    return 0 if args.no_wait else _follow(replies, accepted, colour)


def _follow(replies: Iterator[Reply], accepted: Reply, colour: bool) -> int:
    """Show live progress per run until every run has its final report."""
    waiting = {run["run_id"] for run in accepted.data.get("runs", [])}
    failed = False
    live = sys.stdout.isatty()
    for reply in replies:
        if reply.in_reply_to not in waiting:
            continue
        if not reply.final:
            line = status_line(reply, colour)
            print(f"\r\033[K{line}" if live else line, end="" if live else "\n", flush=True)
            continue
        print(("\r\033[K" if live else "") + render(reply, colour) + "\n")
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
            me = api.get(path("me"))
    except ApiError as exc:
        print(f"kernelrank login: {exc}", file=sys.stderr)
        return 1
    where = save_login(url, token)
    print(f"Signed in to {url} as {me.data.get('display_name', 'you')}; the token is kept in {where} "
          "(readable by you alone).")
    return 0
