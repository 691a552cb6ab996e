"""The API's listening socket: connections accepted on it send small responses at once (TCP_NODELAY)."""

from __future__ import annotations

import asyncio
import socket

from adapters.api.serve import listen


async def test_connections_accepted_on_the_api_socket_have_nodelay():
    """uvicorn serves through ``loop.create_server(sock=...)``; asyncio turns TCP_NODELAY on only for a listening
    socket made as TCP, so without it every response waited for the client's delayed ACK."""
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    sock = listen("127.0.0.1", 0)
    server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname())
        assert await asyncio.wait_for(accepted, 5) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
