"""The state of one NATS connection as the bus sees it, and the retry rules that depend on it.

nats-py reconnects by itself, but for a moment after NATS restarts, a request can fail in ways that only
mean "not yet": it was sent into a connection that then dropped (no answer will ever come), or it reached
the server before the core's subscription did (every client resubscribes on its own after a restart, so
"no responders" right after a reconnect is expected). ``Link`` tracks when the connection went down and
came back, so ``Bus.request`` can send again in those cases, for a short, bounded time, and otherwise
answer at once. ``while_reconnecting`` repeats calls that are safe to repeat (publishes with a message id,
acknowledgements, key-value puts) while NATS is away, for ``PUBLISH_CONFIRM_S`` at most.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from core.contracts.bus._errors import BusUnavailable, StreamBusy, translated

T = TypeVar("T")

RECONNECT_GRACE_S = 10.0  # after a (re)connect, "no responders" may only mean the core has not resubscribed
NO_RESPONDERS_RETRY_S = 3.0  # ... so ask again for this long, at most
FIRST_RETRY_S = 0.05
MAX_RETRY_WAIT_S = 0.5
PUBLISH_CONFIRM_S = 8.0  # how long a repeatable call is retried while NATS is unreachable


class Link:
    """Up or down, and since when; ``dropped`` is set when the connection is lost while a caller waits."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.up = asyncio.Event()
        self.up.set()
        self.dropped = asyncio.Event()
        self.since = clock()

    def lost(self) -> None:
        self.up.clear()
        self.dropped.set()

    def back(self) -> None:
        self.dropped = asyncio.Event()  # waiters of the old drop have been woken; new waits start clean
        self.since = self._clock()
        self.up.set()

    def fresh(self) -> bool:
        """Whether the connection came up (or back) only moments ago."""
        return self._clock() - self.since < RECONNECT_GRACE_S

    async def wait_up(self, timeout_s: float) -> bool:
        if self.up.is_set():
            return True
        try:
            await asyncio.wait_for(self.up.wait(), max(0.0, timeout_s))
        except TimeoutError:
            return False
        return True


def backoff(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): 50 ms doubling to 0.5 s."""
    return min(MAX_RETRY_WAIT_S, FIRST_RETRY_S * 2**attempt)


async def while_reconnecting(action: str, call: Callable[[], Awaitable[T]], *, for_s: float = PUBLISH_CONFIRM_S) -> T:
    """``call()`` with nats-py's errors translated (``action`` names it), repeated while NATS is unreachable
    (``BusUnavailable``) or a stream cannot take it yet (``StreamBusy``: a cluster electing a leader) for up to
    ``for_s``: for calls that are safe to repeat (idempotent puts, acks, and publishes with a message id)."""
    deadline = asyncio.get_running_loop().time() + for_s
    attempt = 0
    while True:
        try:
            with translated(action):
                return await call()
        except (BusUnavailable, StreamBusy):
            if asyncio.get_running_loop().time() >= deadline:
                raise
            await asyncio.sleep(backoff(attempt))
            attempt += 1
