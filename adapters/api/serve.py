"""``kernelrank api``: the app on uvicorn, joined to NATS, until asked to stop.

Once it listens it writes its URL to ``<home>/run/api.url``, where the terminal client on this host finds it
(``kernelrank up`` starts it with ``KERNELRANK_API_PORT`` and any free port works: ``0``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

import uvicorn

from adapters.api.app import create_app
from core.bus import Bus
from core.config import Settings

log = logging.getLogger(__name__)
GRACE_S = 3.0                   # open event streams get this long to finish when the process stops


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the ``kernelrank`` entry point owns the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def local_url(host: str, port: int) -> str:
    """The URL a client on this host uses: a wildcard address is reached through the loopback one."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def run_api(settings: Settings, nats_url: str, stop: asyncio.Event) -> None:
    bus = await Bus.connect(nats_url, name="kernelrank-api")
    config = uvicorn.Config(create_app(bus, settings), host=settings.api_host, port=settings.api_port,
                            log_config=None, lifespan="off", server_header=False, timeout_graceful_shutdown=GRACE_S)
    server = _Server(config)
    serving = asyncio.create_task(server.serve())
    url = ""
    try:
        while not server.started:
            if serving.done():
                break
            await asyncio.sleep(0.02)
        if not server.started:
            with contextlib.suppress(SystemExit):   # uvicorn exits when it cannot bind; it has logged why
                await serving
            raise ConnectionError(f"the API cannot listen on {settings.api_host}:{settings.api_port}; set "
                                  "KERNELRANK_API_PORT to a free port (0 picks one).")
        url = local_url(settings.api_host, server.servers[0].sockets[0].getsockname()[1])
        settings.api_url_file.parent.mkdir(parents=True, exist_ok=True)
        settings.api_url_file.write_text(url)
        log.info("API listening on %s", url)
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait([serving, stopped], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
    finally:
        server.should_exit = True
        with contextlib.suppress(SystemExit):
            await serving
        if url and settings.api_url_file.is_file() and settings.api_url_file.read_text() == url:
            settings.api_url_file.unlink()
        await bus.close()
