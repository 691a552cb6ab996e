"""``python -m tests.fakes.discord --port P --record calls.jsonl [--inject FILE] [--token T]``

Serves a fake Discord on 127.0.0.1:P until Ctrl-C. Point a bot at it with
``KERNELRANK_DISCORD_API_BASE=http://127.0.0.1:P/api`` and ``DISCORD_TOKEN=T``. With ``--inject``, the
interaction object in FILE (a raw ``INTERACTION_CREATE`` payload, e.g. captured from Discord) is dispatched once
the bot has identified; more can be posted to ``http://127.0.0.1:P/_fake/interactions`` at any time. Every HTTP
call is printed, and appended to the ``--record`` file as JSON Lines.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

from tests.fakes.discord.server import FakeDiscord


async def serve(args: argparse.Namespace) -> None:
    fake = FakeDiscord(bot_token=args.token, record=args.record, callback_deadline_s=args.deadline)
    base = await fake.start(port=args.port)
    print(f"fake Discord on {base}: KERNELRANK_DISCORD_API_BASE={fake.api_base} DISCORD_TOKEN={args.token}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    printer = asyncio.create_task(_print_calls(fake))
    try:
        if args.inject:
            payload = json.loads(args.inject.read_text())
            print("waiting for a bot to identify...", flush=True)
            await fake.inject(payload, timeout_s=3600)
            print(f"injected interaction {payload.get('id')} from {args.inject}", flush=True)
        await stop.wait()
    finally:
        printer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await printer
        await fake.stop()


async def _print_calls(fake: FakeDiscord) -> None:
    shown = 0
    while True:
        await fake.wait_for(lambda f, seen=shown: len(f.calls) > seen, timeout_s=10**9)
        for call in fake.calls[shown:]:
            print(f"{call.n:4d} {call.method:6s} {call.status} {call.path}", flush=True)
        shown = len(fake.calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.discord", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--record", type=Path, default=None, help="append every call to this JSON Lines file")
    parser.add_argument("--inject", type=Path, default=None, help="an interaction object to dispatch")
    parser.add_argument("--token", default="fake-bot-token", help="the bot token the fake accepts")
    parser.add_argument("--deadline", type=float, default=3.0, help="seconds an interaction may wait for its answer")
    asyncio.run(serve(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
