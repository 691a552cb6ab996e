"""The terminal client: ``kernelrank submit|list|show|mine|history|task|template|submission|stats``.

A thin adapter like the chat ones: it builds a ``Command``, asks the core over NATS, renders the
``Reply``. A submission then follows its own reply route (one per client session) for live progress per
GPU and the final reports. Exit code 0 means the command (and every run) succeeded.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path

from adapters.terminal import render, status_line
from core.bus import Bus, BusError, Role
from core.commands import MODES, TEMPLATE_LANGUAGES, query_command, submit_command
from core.config import Settings
from core.messages import Actor, Command, CommandKind, Platform, Reply, ReplyTo, Tone


def main(command: str, argv: list[str], settings: Settings) -> int:
    args = _parser(command).parse_args(argv)
    colour = sys.stdout.isatty()
    url = settings.resolved_nats_url()
    if not url:
        print("kernelrank is not running here: start it with `kernelrank up`, or set KERNELRANK_NATS_URL.",
              file=sys.stderr)
        return 1
    try:
        return asyncio.run(_run(command, args, settings, url, colour))
    except KeyboardInterrupt:
        print("\nStopped following. Your submission keeps running; `kernelrank mine LEADERBOARD` shows it later.")
        return 130
    except BusError as exc:
        print(f"kernelrank: {exc}", file=sys.stderr)
        return 1


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
        if command != "task" and command != "template":
            parser.add_argument("--gpu", "-g", default=None)
        if command == "template":
            parser.add_argument("--lang", default=None, choices=TEMPLATE_LANGUAGES)
            parser.add_argument("--output", "-o", type=Path, default=None, help="write the template to this file")
    elif command == "submission":
        parser.add_argument("id")
    return parser


async def _run(command: str, args: argparse.Namespace, settings: Settings, url: str, colour: bool) -> int:
    session = f"{_token(settings.user)}-{uuid.uuid4().hex[:12]}"
    actor = Actor(platform=Platform.CLI, user_id=settings.user, display_name=settings.user)
    reply_to = ReplyTo(platform=Platform.CLI, channel=session)
    bus = await Bus.connect_as(url, f"kernelrank-cli-{session}", settings, Role.API)   # until the CLI speaks HTTP
    try:
        cmd = _command(command, args, actor, reply_to)
        reply = await bus.request(cmd, timeout_s=settings.request_timeout_s)
        print(render(reply, colour))
        if reply.tone is Tone.ERROR:
            return 1
        if command == "template" and args.output:
            args.output.write_text(reply.data.get("source", ""))
            print(f"Wrote {args.output}.")
        if command != "submit" or args.no_wait:
            return 0
        return await _follow(bus, session, reply, colour)
    finally:
        await bus.close()


def _command(command: str, args: argparse.Namespace, actor: Actor, reply_to: ReplyTo) -> Command:
    if command == "submit":
        try:
            content = args.file.read_bytes()
        except OSError as exc:
            raise SystemExit(f"kernelrank: cannot read {args.file}: {exc.strerror}.") from None
        return submit_command(actor, reply_to, args.file.name, content, leaderboard=args.leaderboard,
                              gpus=args.gpu, mode=args.mode)
    fields = {k: v for k, v in vars(args).items() if k not in ("output",)}
    return query_command(actor, reply_to, CommandKind(command), **fields)


async def _follow(bus: Bus, session: str, accepted: Reply, colour: bool) -> int:
    """Show live progress per run until every run has its final report."""
    waiting = {run["run_id"] for run in accepted.data.get("runs", [])}
    failed = False
    live = sys.stdout.isatty()
    async for reply in bus.follow_replies(session):
        if reply.in_reply_to not in waiting:
            continue
        if not reply.final:
            line = status_line(reply, colour)
            print(f"\r\033[K{line}" if live else line, end="" if live else "\n", flush=True)
            continue
        print(("\r\033[K" if live else "") + render(reply, colour) + "\n")
        failed |= reply.tone is Tone.ERROR
        waiting.discard(reply.in_reply_to)
        if not waiting:
            break
    return 1 if failed else 0


def _token(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:32] or "user"
