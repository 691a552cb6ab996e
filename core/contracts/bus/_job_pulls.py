"""The core's pulls from the job queues, for workers' requests.

A pull for several jobs asks for what is waiting now, up to a byte budget (the jobs travel to the worker in one
answer); when nothing is waiting, or the first job alone is over the budget, it waits for one job of any size.
Each pull listens on an inbox of its own, so workers' requests never take each other's jobs (JetStream sends a
delivery with its stream subject, so one inbox could not tell whose pull it answers), until it holds every job the
server says it sent: in a cluster the status that ends a pull can overtake the pull's last jobs.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from nats.aio.msg import Msg

from core.contracts import subjects

ACK_PREFIX = "$JS.ACK."
NO_WAIT_S = 2.0  # a pull for what is waiting now is answered at once; this bounds a server that does not answer


async def pull_jobs(nc: Any, durable: str, batch: int, max_bytes: int, wait_s: float) -> list[Msg]:
    """Up to ``batch`` deliveries of ``durable`` (at most ``max_bytes`` together), or the next one of any size
    within ``wait_s``; none when none came."""
    if batch > 1:
        taken = await _round(nc, durable, {"batch": batch, "max_bytes": max_bytes, "no_wait": True}, NO_WAIT_S)
        if taken:
            return taken
    return await _round(nc, durable, {"batch": 1, "expires": int(wait_s * 1e9)}, wait_s + 1.0)


async def _round(nc: Any, durable: str, request: dict[str, Any], timeout_s: float) -> list[Msg]:
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    taken: list[Msg] = []
    try:
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{subjects.JOBS}.{durable}", json.dumps(request).encode(), inbox)
        wanted = request["batch"]
        async with asyncio.timeout(timeout_s):
            while len(taken) < wanted:
                msg = await sub.next_msg(timeout=None)
                if msg.reply and msg.reply.startswith(ACK_PREFIX):
                    taken.append(msg)
                elif msg.headers and msg.headers.get("Status"):  # 404, 408 (expired), 409: the pull is over
                    # but in a cluster the jobs it sent may come after it says so: wait for those it counts
                    left = msg.headers.get("Nats-Pending-Messages")
                    wanted = request["batch"] - int(left) if left else len(taken)
    except TimeoutError:
        pass
    finally:
        await sub.unsubscribe()
    return taken
