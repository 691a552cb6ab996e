"""``kernelrank api``: the app on uvicorn, joined to NATS, until asked to stop.

Once it listens it writes its URL to ``<home>/run/api.url``, where the terminal client on this host finds it
(``kernelrank up`` starts it with ``KERNELRANK_API_PORT`` and any free port works: ``0``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn

from adapters.api.app import create_app
from core.contracts.bus import Bus, Role
from core.contracts.config import Settings

log = logging.getLogger(__name__)
GRACE_S = 3  # seconds: open event streams get this long to finish when the process stops


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the ``kernelrank`` entry point owns the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def local_url(host: str, port: int) -> str:
    """The URL a client on this host uses: a wildcard address is reached through the loopback one."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (``0``: any free port), or ``ConnectionError`` saying what to change.

    Created as TCP by name: asyncio sets TCP_NODELAY on the connections it accepts only when the listening
    socket's ``proto`` says TCP, and without it every small response waits ~40 ms for a delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConnectionError(
            f"the API cannot listen on {host}:{port} ({exc.strerror}); set KERNELRANK_API_PORT to "
            "a free port (0 picks one) or KERNELRANK_API_HOST to an address of this host."
        ) from None
    return sock


async def run_api(settings: Settings, nats_url: str, stop: asyncio.Event) -> None:
    sock = listen(settings.api_host, settings.api_port)
    bus = await Bus.connect_as(nats_url, "kernelrank-api", settings, Role.API)
    config = uvicorn.Config(
        create_app(bus, settings),
        log_config=None,
        lifespan="off",
        server_header=False,
        timeout_graceful_shutdown=GRACE_S,
    )
    server = _Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    url = local_url(settings.api_host, sock.getsockname()[1])
    try:
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if server.started:
            settings.api_url_file.parent.mkdir(parents=True, exist_ok=True)
            settings.api_url_file.write_text(url)
            log.info("API listening on %s", url)
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait([serving, stopped], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
    finally:
        server.should_exit = True
        await serving
        if settings.api_url_file.is_file() and settings.api_url_file.read_text() == url:
            settings.api_url_file.unlink()
        await bus.close()
        sock.close()
