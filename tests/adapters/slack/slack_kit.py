"""The Slack adapter under test: the real adapter (Bolt app over HTTP, reply consumer) on a real NATS,
its Web API pointed at a ``FakeSlack``, and a ``SlackSender`` that posts signed requests to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from adapters.slack.config import SlackConfig
from adapters.slack.run import SlackAdapter
from core.contracts import reply_parts
from core.contracts.bus import Bus
from core.contracts.credentials import BusCredentials
from core.contracts.messages import Platform, Reply, ReplyTo, new_id
from tests.fakes.slack import FakeSlack, payloads
from tests.fakes.slack.payloads import SlackSender

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CORRECT = (Path(__file__).resolve().parents[2] / "fixtures" / "harness" / "submissions" / "correct.py").read_bytes()


@dataclass
class RunningSlack:
    adapter: SlackAdapter
    sender: SlackSender
    fake: FakeSlack
    bus: Bus
    url: str


def config_for(fake: FakeSlack, *, max_source_bytes: int = 256 * 1024) -> SlackConfig:
    return SlackConfig(
        bot_token=fake.bot_token,
        app_token=fake.app_token,
        signing_secret=SIGNING_SECRET,
        api_url=fake.api_url,
        command="/kernelrank",
        max_source_bytes=max_source_bytes,
        request_timeout_s=10.0,
    )


def form_values(
    file: dict | None, board: str | None = "vectoradd", gpus: tuple[str, ...] = ("CPU",), mode: str | None = "test"
) -> dict:
    """The submission form's ``view.state.values`` as Slack sends them when the person presses Submit."""
    return {
        "kr_file": {"file": payloads.file_value(file) if file else {"type": "file_input", "files": []}},
        "kr_leaderboard": {"kr_pick_leaderboard": payloads.select_value(board)},
        f"kr_gpus.{board or ''}": {"gpus": payloads.multi_select_value(list(gpus))},
        "kr_mode": {"mode": payloads.select_value(mode)},
    }


@contextmanager
def fake_workspace() -> Iterator[FakeSlack]:
    """A fake Slack whose users have display names (Ada Lovelace is U0ALICE, Bob is U0BOB)."""
    with FakeSlack() as fake:
        fake.add_user("U0ALICE", "Ada Lovelace")
        fake.add_user("U0BOB", "Bob")
        yield fake


@asynccontextmanager
async def running_slack(
    nats_url: str, fake: FakeSlack, credentials: BusCredentials | None = None, **config: int
) -> AsyncIterator[RunningSlack]:
    """The adapter started and serving HTTP on a free port; stopped (and its bus closed) on exit."""
    bus = await Bus.connect(nats_url, name="slack-under-test", credentials=credentials)
    adapter = SlackAdapter(bus, config_for(fake, **config))
    try:
        await adapter.start()
        url = await adapter.serve_http("127.0.0.1", 0)
        yield RunningSlack(adapter, SlackSender(url, SIGNING_SECRET), fake, bus, url)
    finally:
        await adapter.stop()
        await bus.close()


async def settled(bus: Bus, fake: FakeSlack, timeout_s: float = 30.0) -> None:
    """Return once the running adapter has handled every reply published before this call.

    Replies are consumed in order, so a marker published last and seen posted means the rest were handled.
    """
    marker = new_id()
    await bus.publish_reply(
        Reply(
            reply_to=ReplyTo(platform=Platform.SLACK, channel="C0MARKER"), parts=[reply_parts.text(marker)], id=marker
        )
    )
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not any(marker in c.params.get("text", "") for c in fake.calls_to("chat.postMessage", channel="C0MARKER")):
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the adapter did not post the marker reply")
        await asyncio.sleep(0.05)
