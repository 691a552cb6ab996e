"""A fake Slack for tests: the server the adapter calls (``FakeSlack``), and what Slack sends to the
adapter (``payloads``). Run it alone with ``python -m tests.fakes.slack --port P --record calls.jsonl``."""

from tests.fakes.slack.calls import Call
from tests.fakes.slack.server import FakeSlack

__all__ = ["Call", "FakeSlack"]
