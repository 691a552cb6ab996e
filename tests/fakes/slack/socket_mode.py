"""The fake's Socket Mode side: the WebSocket an app opens with the URL from ``apps.connections.open``.

On connect it says ``hello``; ``send`` pushes an envelope (``events_api``, ``slash_commands``,
``interactive``) the way Slack does and waits for the app's acknowledgement, which echoes the
``envelope_id`` (and may carry a response payload).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.slack.calls import Call


class SocketMode:
    def __init__(self, log: Callable[[Any], None], ids: itertools.count) -> None:
        from tests.fakes.slack.server import Call  # the server module imports this one

        self._call = Call
        self._log = log
        self._ids = ids
        self._sockets: list[web.WebSocketResponse] = []
        self._acks: dict[str, asyncio.Future] = {}

    async def serve(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=None)
        # Logged before the handshake answer: once the app sees the upgrade, the call must be on record.
        self._log(Call("socket.open", dict(request.query), "none"))
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": len(self._sockets),
                "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                "connection_info": {"app_id": "A0KERNEL"},
            }
        )
        try:
            async for message in ws:
                if message.type is not WSMsgType.TEXT:
                    continue
                ack = json.loads(message.data)
                self._log(Call("socket.ack", ack, "none"))
                future = self._acks.pop(ack.get("envelope_id", ""), None)
                if future is not None and not future.done():
                    future.set_result(ack)
        finally:
            self._sockets.remove(ws)
        return ws

    async def send(self, kind: str, payload: dict[str, Any], retry_attempt: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + 10
        while not self._sockets:
            if time.monotonic() > deadline:
                raise TimeoutError("no Socket Mode connection")
            await asyncio.sleep(0.05)
        envelope_id = f"{next(self._ids):08x}-fake-envelope"
        future = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = future
        await self._sockets[-1].send_json(
            {
                "envelope_id": envelope_id,
                "payload": payload,
                "type": kind,
                "accepts_response_payload": kind != "events_api",
                "retry_attempt": retry_attempt,
                "retry_reason": "timeout" if retry_attempt else "",
            }
        )
        return await future

    async def close(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
