"""``python -m tests.fakes.slack --port P --record calls.jsonl``: the fake Slack as a process.

Point the adapter at it with ``KERNELRANK_SLACK_API_URL=http://127.0.0.1:P/api/`` and the printed tokens.
Every call is appended to the record file as one JSON line. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from tests.fakes.slack.server import FakeSlack


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.slack", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free port)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--record", type=Path, default=None, help="append every call to this JSONL file")
    parser.add_argument("--bot-token", default="xoxb-fake-bot-token")
    parser.add_argument("--app-token", default="xapp-fake-app-token")
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    fake = FakeSlack(bot_token=args.bot_token, app_token=args.app_token, record=args.record)
    fake.start(args.host, args.port)
    try:
        print(f"fake Slack at {fake.api_url} (bot token {args.bot_token}, app token {args.app_token})", flush=True)
        stop.wait()
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
