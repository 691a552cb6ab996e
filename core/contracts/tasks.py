"""Stopping a background task for certain."""

from __future__ import annotations

import asyncio
from typing import Any

RECANCEL_S = 1.0


async def cancel_and_wait(task: asyncio.Task[Any], every_s: float = RECANCEL_S) -> None:
    """Cancel ``task`` and wait until it has ended, cancelling it again while it carries on.

    One cancellation can be lost. Python 3.11's ``asyncio.wait_for``, inside nats-py's requests, returns an
    answer that arrived together with the cancellation and drops the cancellation. A retry loop cancelled
    there then keeps retrying, and a plain ``cancel(); await task`` waits for it forever. A failure of the
    task itself (not its cancellation) is raised here.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=every_s)
    if not task.cancelled():
        task.result()
