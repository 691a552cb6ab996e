"""A loopback Discord: the REST routes a bot uses and the gateway websocket, recording every call.

The gateway speaks Discord's v10 protocol: HELLO, then IDENTIFY (token and intents checked), READY and one
GUILD_CREATE per guild, heartbeats acknowledged, and ``inject`` dispatches raw ``INTERACTION_CREATE`` objects.
REST follows Discord's documented rules and errors where a bot can get them wrong: one callback per
interaction within the deadline (3 s), interaction tokens valid 15 minutes, message limits (``limits``),
``enforce_nonce`` dedupe, one thread per message (the thread's id is the message's), only the bot's own
messages editable, unknown channels and messages answered 404 with Discord's JSON codes.

Every HTTP call is kept in ``calls`` (and appended to a JSON Lines file when ``record`` is given): method, the
route template, path (interaction tokens shown as ``<token>``), query, JSON body (or ``payload_json``), the
uploaded files' names and sizes, status and the id of what was created. The bot token is never recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.fakes.discord import objects as o
from tests.fakes.discord.limits import message_errors
from tests.fakes.discord.rest import RestRoutes

HEARTBEAT_MS = 41250
EPHEMERAL, LOADING = 1 << 6, 1 << 7


@dataclass
class Interaction:
    payload: dict[str, Any]
    received: float
    acknowledged: bool = False
    original: str | None = None  # message id of the response, once there is one
    original_pending: bool = False  # a deferred response not yet edited (a followup replaces it)

    @property
    def id(self) -> str:
        return self.payload["id"]

    @property
    def token(self) -> str:
        return self.payload["token"]


@dataclass(eq=False)
class Session:
    ws: web.WebSocketResponse
    seq: int = 0
    intents: int | None = None


@dataclass
class Call:
    method: str
    route: str
    path: str
    query: dict[str, str]
    json: Any
    files: list[dict[str, Any]]
    status: int = 0
    created: str | None = None
    n: int = 0
    at: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in vars(self).items() if k != "extra"}
        return {**data, **self.extra}


class FakeDiscord:
    """Start with ``await fake.start()``; point the bot at ``fake.api_base``; ``await fake.stop()`` at the end."""

    def __init__(
        self,
        *,
        bot_token: str = "fake-bot-token",
        guilds: list[dict] | None = None,
        callback_deadline_s: float = 3.0,
        token_ttl_s: float = 15 * 60,
        record: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bot_token = bot_token
        self.guilds = guilds if guilds is not None else [o.guild()]
        self.callback_deadline_s = callback_deadline_s
        self.token_ttl_s = token_ttl_s
        self.clock = clock
        self.record = record
        self.calls: list[Call] = []
        self.channels: dict[str, dict] = {c["id"]: c for g in self.guilds for c in g["channels"]}
        self.forbidden: set[str] = set()  # channels the bot may not post in (403 Missing Access)
        self.private_threads_allowed = True  # False: the bot lacks Create Private Threads (403 Missing Permissions)
        self.closed_dms: set[str] = set()  # users who take no direct message from the bot (403, code 50007)
        self.messages: dict[str, dict] = {}  # id -> message, in creation order
        self.deleted: set[str] = set()
        self.files: dict[str, list[dict]] = {}  # message id -> uploaded files (name, size, data)
        self.interactions: dict[str, Interaction] = {}  # by id
        self.by_token: dict[str, Interaction] = {}
        self.nonces: dict[tuple[str, str], tuple[float, str]] = {}
        self.commands: dict[str, list[dict]] = {}  # "global" or a guild id -> registered commands
        self.attachments: dict[str, tuple[bytes, str]] = {}
        self.sessions: set[Session] = set()
        self._identified = asyncio.Event()
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # ----- lifecycle ----------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/attachments/{channel}/{attachment}/{filename}", self._cdn)
        app.router.add_post("/_fake/interactions", self._inject_http)
        RestRoutes(self).add_to(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound = site._server.sockets[0].getsockname()  # the port the OS chose
        self.base_url = f"http://{bound[0]}:{bound[1]}"
        return self.base_url

    async def stop(self) -> None:
        for session in list(self.sessions):
            await session.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/api"

    @property
    def gateway_url(self) -> str:
        return self.base_url.replace("http", "ws", 1) + "/gateway"

    # ----- what tests use -----------------------------------------------------------------------

    async def wait_identified(self, timeout_s: float = 30.0) -> None:
        await asyncio.wait_for(self._identified.wait(), timeout_s)

    async def inject(self, payload: dict[str, Any], timeout_s: float = 30.0) -> Interaction:
        """Dispatch a raw interaction object to the connected bot, as Discord's gateway does."""
        await self.wait_identified(timeout_s)
        interaction = self.expect(payload)
        await self.dispatch("INTERACTION_CREATE", payload)
        return interaction

    def expect(self, payload: dict[str, Any], age_s: float = 0.0) -> Interaction:
        """Know an interaction (its id and token) without dispatching it, as received ``age_s`` seconds ago."""
        self._learn(payload)
        interaction = Interaction(payload=payload, received=self.clock() - age_s)
        self.interactions[interaction.id] = interaction
        self.by_token[interaction.token] = interaction
        return interaction

    def add_attachment(
        self,
        filename: str,
        data: bytes,
        content_type: str | None = "text/x-python; charset=utf-8",
        channel_id: str = o.KERNELS_CHANNEL,
        ephemeral: bool = True,
    ) -> dict[str, Any]:
        """A file a user attached to a command; its URL serves the bytes (with CDN-style signature query)."""
        attachment_id = o.snowflake()
        self.attachments[attachment_id] = (data, content_type or "application/octet-stream")
        url = f"{self.base_url}/attachments/{channel_id}/{attachment_id}/{filename}?ex=67a1b2c3&is=67a0613c&hm=00ff"
        return o.attachment(attachment_id, filename, len(data), url, content_type, ephemeral)

    async def wait_for(self, predicate: Callable[[FakeDiscord], Any], timeout_s: float = 30.0) -> Any:
        """Wait until ``predicate(self)`` is truthy (re-checked after every call); return its value."""
        async with self._changed:
            return await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self)), timeout_s)

    def calls_to(self, method: str, route: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and c.route == route]

    def channel_messages(self, channel_id: str, ephemeral: bool = False) -> list[dict]:
        """What the channel shows everyone (``ephemeral=True``: also what only one user sees), oldest first."""
        return [
            m
            for m in self.messages.values()
            if m["channel_id"] == channel_id
            and m["id"] not in self.deleted
            and (ephemeral or not m["flags"] & EPHEMERAL)
        ]

    # ----- gateway -----------------------------------------------------------------------------

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        for session in list(self.sessions):
            session.seq += 1
            await session.ws.send_json({"op": 0, "t": event, "s": session.seq, "d": data})

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        session = Session(ws)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_MS}, "s": None, "t": None})
        try:
            async for frame in ws:
                event = json.loads(frame.data)
                if event.get("op") == 1:
                    await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
                elif event.get("op") == 2:
                    await self._identify(session, event["d"])
                elif event.get("op") == 6:  # resume: this fake keeps no sessions, start over
                    await ws.send_json({"op": 9, "d": False, "s": None, "t": None})
        finally:
            self.sessions.discard(session)
        return ws

    async def _identify(self, session: Session, data: dict[str, Any]) -> None:
        await self._note(
            Call(
                "WS",
                "IDENTIFY",
                "/gateway",
                {},
                {"intents": data.get("intents"), "properties": data.get("properties")},
                [],
            )
        )
        if data.get("token") != self.bot_token:
            await session.ws.close(code=4004, message=b"Authentication failed.")
            return
        session.intents = data.get("intents")
        self.sessions.add(session)
        ready = {
            "v": 10,
            "user": o.BOT_USER,
            "guilds": [{"id": g["id"], "unavailable": True} for g in self.guilds],
            "session_id": "fake-session",
            "resume_gateway_url": self.gateway_url,
            "shard": [0, 1],
            "application": {"id": o.APPLICATION_ID, "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "user_settings": {},
        }
        await self.dispatch("READY", ready)
        for guild in self.guilds:
            await self.dispatch("GUILD_CREATE", guild)
        self._identified.set()

    # ----- helpers shared with the REST routes ----------------------------------------------------

    def _learn(self, payload: dict[str, Any]) -> None:
        """Know the channel an interaction came from, so that the bot can post there."""
        channel = payload.get("channel") or ({"id": payload["channel_id"]} if payload.get("channel_id") else None)
        if channel and channel["id"] not in self.channels:
            known = {k: v for k, v in channel.items() if k != "permissions"}
            self.channels[channel["id"]] = {
                **o.text_channel(channel["id"], channel.get("name") or "channel", payload.get("guild_id")),
                **known,
            }
        message = payload.get("message")
        if message and message["id"] not in self.messages:
            self.messages[message["id"]] = message

    def new_message(self, channel_id: str, body: dict[str, Any], files: list[dict], **extra: Any) -> dict[str, Any]:
        attachments = [
            o.attachment(
                o.snowflake(),
                f["name"],
                f["size"],
                f"{self.base_url}/attachments/{channel_id}/0/{f['name']}",
                f["content_type"],
            )
            for f in files
        ]
        message = o.message(
            o.snowflake(),
            channel_id,
            content=body.get("content") or "",
            embeds=body.get("embeds") or [],
            attachments=attachments,
            components=body.get("components") or [],
            flags=int(body.get("flags") or 0),
            **extra,
        )
        self.messages[message["id"]] = message
        self.files[message["id"]] = files
        return message

    def edit_message(self, message: dict[str, Any], body: dict[str, Any], files: list[dict]) -> dict[str, Any]:
        for key in ("content", "embeds", "components"):
            if key in body:
                message[key] = body[key] if body[key] is not None else ([] if key != "content" else "")
        if "attachments" in body or files:
            kept = {
                a.get("id")
                for a in body.get("attachments") or []
                if "id" in a and a["id"] in {x["id"] for x in message["attachments"]}
            }
            message["attachments"] = [a for a in message["attachments"] if a["id"] in kept] + [
                o.attachment(
                    o.snowflake(),
                    f["name"],
                    f["size"],
                    f"{self.base_url}/attachments/0/0/{f['name']}",
                    f["content_type"],
                )
                for f in files
            ]
            self.files[message["id"]] = [
                f
                for f in self.files.get(message["id"], [])
                if f["name"] in {a["filename"] for a in message["attachments"]}
            ] + files
        message["flags"] = message["flags"] & ~LOADING
        message["edited_timestamp"] = o.timestamp()
        return message

    def invalid(self, body: dict[str, Any], files: list[dict], *, editing: bool = False) -> dict[str, Any] | None:
        return message_errors(body, len(files), editing=editing)

    async def _note(self, call: Call) -> None:
        call.n, call.at = len(self.calls) + 1, round(self.clock(), 3)
        self.calls.append(call)
        if self.record is not None:
            with self.record.open("a") as out:
                out.write(json.dumps(call.to_dict()) + "\n")
        async with self._changed:
            self._changed.notify_all()

    async def _cdn(self, request: web.Request) -> web.Response:
        found = self.attachments.get(request.match_info["attachment"])
        await self._note(
            Call(
                "GET",
                "/attachments/{channel}/{attachment}/{filename}",
                request.path,
                dict(request.query),
                None,
                [],
                status=200 if found else 404,
            )
        )
        if found is None:
            return web.Response(status=404, text="Not Found")
        data, content_type = found
        return web.Response(body=data, headers={"Content-Type": content_type})

    async def _inject_http(self, request: web.Request) -> web.Response:
        """``POST /_fake/interactions`` with an interaction object: inject it (for people replaying payloads)."""
        interaction = await self.inject(await request.json())
        return web.json_response({"id": interaction.id})


def redact(path: str, tokens: dict[str, Interaction]) -> str:
    """The path with interaction tokens replaced, so recordings can be shared."""
    return re.sub(
        r"/(interactions/\d+|webhooks/\d+)/([^/]+)",
        lambda m: f"/{m.group(1)}/<token>" if m.group(2) in tokens else m.group(0),
        path,
    )


@contextlib.asynccontextmanager
async def running_fake(**kwargs: Any):
    fake = FakeDiscord(**kwargs)
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()
