"""The fake's REST routes (``/api/v10/...``): login, gateway discovery, commands, interactions, messages, threads.

Each route is one method returning ``(status, body, created id)``; ``_route`` reads the body (JSON, or
multipart with ``payload_json`` and ``files[n]``), checks the bot token where Discord wants it, records the call
and answers. Error bodies are Discord's: ``{"code": ..., "message": ...}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes.discord import objects as o
from tests.fakes.discord.limits import THREAD_NAME, choice_errors

if TYPE_CHECKING:
    from tests.fakes.discord.server import FakeDiscord, Interaction

Result = tuple[int, Any, str | None]
EPHEMERAL, LOADING = 1 << 6, 1 << 7
NONCE_WINDOW_S = 300.0
COMMAND_NAME = re.compile(r"^[-_a-z0-9]{1,32}$")


def error(status: int, code: int, message: str, errors: dict | None = None) -> Result:
    body: dict[str, Any] = {"code": code, "message": message}
    if errors:
        body["errors"] = errors
    return status, body, None


class RestRoutes:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    def add_to(self, app: web.Application) -> None:
        routes = [
            ("GET", "/users/@me", self.me, True),
            ("GET", "/oauth2/applications/@me", self.application, True),
            ("GET", "/gateway", self.gateway, False),
            ("GET", "/gateway/bot", self.gateway_bot, True),
            ("PUT", "/applications/{application}/commands", self.put_commands, True),
            ("GET", "/applications/{application}/commands", self.get_commands, True),
            ("PUT", "/applications/{application}/guilds/{guild}/commands", self.put_commands, True),
            ("GET", "/applications/{application}/guilds/{guild}/commands", self.get_commands, True),
            ("POST", "/interactions/{interaction}/{token}/callback", self.callback, False),
            ("POST", "/webhooks/{application}/{token}", self.followup, False),
            ("GET", "/webhooks/{application}/{token}/messages/{message}", self.webhook_message, False),
            ("PATCH", "/webhooks/{application}/{token}/messages/{message}", self.webhook_message, False),
            ("DELETE", "/webhooks/{application}/{token}/messages/{message}", self.webhook_message, False),
            ("GET", "/channels/{channel}", self.get_channel, True),
            ("POST", "/channels/{channel}/messages", self.create_message, True),
            ("GET", "/channels/{channel}/messages/{message}", self.message, True),
            ("PATCH", "/channels/{channel}/messages/{message}", self.message, True),
            ("DELETE", "/channels/{channel}/messages/{message}", self.message, True),
            ("POST", "/channels/{channel}/messages/{message}/threads", self.thread_from_message, True),
            ("POST", "/channels/{channel}/threads", self.thread, True),
            ("POST", "/users/@me/channels", self.open_dm, True),
        ]
        for version in (9, 10):
            for method, route, handler, bot_auth in routes:
                app.router.add_route(method, f"/api/v{version}{route}", self._route(route, handler, bot_auth))
            app.router.add_route("*", f"/api/v{version}/{{tail:.*}}", self._route("(unknown)", self.unknown, False))

    def _route(self, route: str, handler: Callable[..., Awaitable[Result]], bot_auth: bool):
        from tests.fakes.discord.server import Call, redact

        async def serve(request: web.Request) -> web.StreamResponse:
            body, files = await _read_body(request)
            call = Call(
                request.method,
                route,
                redact(request.path, self.fake.by_token),
                dict(request.query),
                body,
                [{k: f[k] for k in ("name", "size", "content_type")} for f in files],
                extra={"auth": "bot" if request.headers.get("Authorization", "").startswith("Bot ") else "none"},
            )
            token = request.match_info.get("token")
            if token in self.fake.by_token:
                call.extra["interaction"] = self.fake.by_token[token].id
            if bot_auth and request.headers.get("Authorization") != f"Bot {self.fake.bot_token}":
                status, answer, created = error(401, 0, "401: Unauthorized")
            else:
                status, answer, created = await handler(request, body if body is not None else {}, files)
            call.status, call.created = status, created
            await self.fake._note(call)
            if status == 204:
                return web.Response(status=204)
            # exactly "application/json", as Discord sends it (discord.py compares the header as a string)
            return web.Response(
                status=status, body=json.dumps(answer).encode(), headers={"Content-Type": "application/json"}
            )

        return serve

    # ----- login and discovery -------------------------------------------------------------------

    async def me(self, request: web.Request, body: Any, files: list) -> Result:
        return 200, o.BOT_USER, None

    async def application(self, request: web.Request, body: Any, files: list) -> Result:
        return 200, o.application(), None

    async def gateway(self, request: web.Request, body: Any, files: list) -> Result:
        return 200, {"url": self.fake.gateway_url}, None

    async def gateway_bot(self, request: web.Request, body: Any, files: list) -> Result:
        return (
            200,
            {
                "url": self.fake.gateway_url,
                "shards": 1,
                "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1},
            },
            None,
        )

    async def unknown(self, request: web.Request, body: Any, files: list) -> Result:
        return error(404, 0, "404: Not Found")

    # ----- application commands -------------------------------------------------------------------

    async def put_commands(self, request: web.Request, body: Any, files: list) -> Result:
        scope = request.match_info.get("guild", "global")
        known = {c["name"]: c["id"] for c in self.fake.commands.get(scope, [])}
        stored, problems = [], {}
        for index, command in enumerate(body):
            bad = _command_problems(command)
            if bad:
                problems[str(index)] = bad
            stored.append(
                {
                    **command,
                    "id": known.get(command["name"]) or o.snowflake(),
                    "application_id": o.APPLICATION_ID,
                    "version": o.snowflake(),
                    "type": command.get("type", 1),
                    **({"guild_id": scope} if scope != "global" else {}),
                }
            )
        if problems:
            return error(400, 50035, "Invalid Form Body", problems)
        self.fake.commands[scope] = stored
        return 200, stored, None

    async def get_commands(self, request: web.Request, body: Any, files: list) -> Result:
        return 200, self.fake.commands.get(request.match_info.get("guild", "global"), []), None

    # ----- interactions -------------------------------------------------------------------------

    async def callback(self, request: web.Request, body: dict, files: list) -> Result:
        interaction = self.fake.interactions.get(request.match_info["interaction"])
        if interaction is None or interaction.token != request.match_info["token"]:
            return error(404, 10062, "Unknown interaction")
        if interaction.acknowledged:
            return error(400, 40060, "Interaction has already been acknowledged.")
        if self.fake.clock() - interaction.received > self.fake.callback_deadline_s:
            return error(404, 10062, "Unknown interaction")
        kind, data = body.get("type"), body.get("data") or {}
        payload = interaction.payload
        answer: dict[str, Any] = {
            "interaction": {
                "id": interaction.id,
                "type": payload["type"],
                "response_message_id": None,
                "response_message_loading": False,
                "response_message_ephemeral": False,
            }
        }
        if kind in (4, 5):
            invalid = self.fake.invalid(data, files) if kind == 4 else None
            if invalid:
                return 400, invalid, None
            flags = int(data.get("flags") or 0) | (LOADING if kind == 5 else 0)
            message = self.fake.new_message(
                payload.get("channel_id") or payload["channel"]["id"],
                {**data, "flags": flags},
                files,
                webhook_id=o.APPLICATION_ID,
                guild_id=payload.get("guild_id"),
            )
            interaction.original, interaction.original_pending = message["id"], kind == 5
            answer["interaction"].update(
                response_message_id=message["id"],
                response_message_loading=kind == 5,
                response_message_ephemeral=bool(flags & EPHEMERAL),
            )
            answer["resource"] = {"type": kind, "message": message}
        elif kind in (6, 7):
            message = self.fake.messages.get((payload.get("message") or {}).get("id", ""))
            if message is None:
                return error(404, 10008, "Unknown Message")
            if kind == 7:
                self.fake.edit_message(message, data, files)
            interaction.original = message["id"]
            answer["resource"] = {"type": kind, "message": message}
        elif kind == 8:
            invalid = choice_errors(data.get("choices") or [])
            if invalid:
                return 400, invalid, None
            answer["resource"] = {"type": 8}
        elif kind not in (1, 9):
            return error(400, 50035, "Invalid Form Body", {"type": {"_errors": [{"code": "BASE_TYPE_CHOICES"}]}})
        interaction.acknowledged = True
        with_response = request.query.get("with_response", "").lower() in ("1", "true")
        return (200, answer, interaction.original) if with_response else (204, None, interaction.original)

    def _by_token(self, request: web.Request) -> tuple[Interaction | None, Result | None]:
        interaction = self.fake.by_token.get(request.match_info["token"])
        if interaction is None or request.match_info["application"] != o.APPLICATION_ID:
            return None, error(404, 10015, "Unknown Webhook")
        if self.fake.clock() - interaction.received > self.fake.token_ttl_s:
            return None, error(401, 50027, "Invalid Webhook Token")
        return interaction, None

    async def followup(self, request: web.Request, body: dict, files: list) -> Result:
        interaction, failure = self._by_token(request)
        if failure:
            return failure
        if not interaction.acknowledged:
            return error(404, 10015, "Unknown Webhook")
        invalid = self.fake.invalid(body, files)
        if invalid:
            return 400, invalid, None
        original = self.fake.messages.get(interaction.original or "")
        if interaction.original_pending and original is not None and original["id"] not in self.fake.deleted:
            interaction.original_pending = False  # Discord: the first followup replaces a deferred answer
            return 200, self.fake.edit_message(original, body, files), original["id"]
        payload = interaction.payload
        message = self.fake.new_message(
            payload.get("channel_id") or payload["channel"]["id"],
            body,
            files,
            webhook_id=o.APPLICATION_ID,
            guild_id=payload.get("guild_id"),
        )
        return 200, message, message["id"]

    async def webhook_message(self, request: web.Request, body: dict, files: list) -> Result:
        interaction, failure = self._by_token(request)
        if failure:
            return failure
        wanted = request.match_info["message"]
        message_id = interaction.original if wanted == "@original" else wanted
        message = self.fake.messages.get(message_id or "")
        if message is None or message["id"] in self.fake.deleted:
            return error(404, 10008, "Unknown Message")
        if request.method == "DELETE":
            self.fake.deleted.add(message["id"])
            return 204, None, None
        if request.method == "PATCH":
            invalid = self.fake.invalid(body, files, editing=True)
            if invalid:
                return 400, invalid, None
            self.fake.edit_message(message, body, files)
            if message["id"] == interaction.original:
                interaction.original_pending = False
        return 200, message, None

    # ----- channels, messages, threads ------------------------------------------------------------

    def _channel(self, request: web.Request) -> tuple[dict | None, Result | None]:
        channel = self.fake.channels.get(request.match_info["channel"])
        if channel is None:
            return None, error(404, 10003, "Unknown Channel")
        if channel["id"] in self.fake.forbidden:
            return None, error(403, 50001, "Missing Access")
        return channel, None

    async def get_channel(self, request: web.Request, body: Any, files: list) -> Result:
        channel, failure = self._channel(request)
        return failure or (200, channel, None)

    async def create_message(self, request: web.Request, body: dict, files: list) -> Result:
        channel, failure = self._channel(request)
        if failure:
            return failure
        if (
            channel.get("type") == o.DM
            and {u.get("id") for u in channel.get("recipients") or []} & self.fake.closed_dms
        ):
            return error(403, 50007, "Cannot send messages to this user")
        invalid = self.fake.invalid(body, files)
        if invalid:
            return 400, invalid, None
        nonce = body.get("nonce")
        if nonce and body.get("enforce_nonce"):
            seen = self.fake.nonces.get((o.BOT_ID, str(nonce)))
            if seen and self.fake.clock() - seen[0] < NONCE_WINDOW_S and seen[1] not in self.fake.deleted:
                return 200, self.fake.messages[seen[1]], None
        reference = body.get("message_reference")
        if (
            reference
            and str(reference.get("message_id")) not in self.fake.messages
            and reference.get("fail_if_not_exists", True)
        ):
            return error(
                400,
                50035,
                "Invalid Form Body",
                {
                    "message_reference": {
                        "_errors": [{"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "message": "Unknown message"}]
                    }
                },
            )
        if "thread_metadata" in channel:
            channel["thread_metadata"]["archived"] = False  # posting unarchives a thread
            channel["message_count"] += 1
        message = self.fake.new_message(
            channel["id"],
            body,
            files,
            nonce=str(nonce) if nonce else None,
            reference=reference,
            guild_id=channel.get("guild_id"),
        )
        if nonce:
            self.fake.nonces[(o.BOT_ID, str(nonce))] = (self.fake.clock(), message["id"])
        return 200, message, message["id"]

    async def message(self, request: web.Request, body: dict, files: list) -> Result:
        channel, failure = self._channel(request)
        if failure:
            return failure
        message = self.fake.messages.get(request.match_info["message"])
        if message is None or message["channel_id"] != channel["id"] or message["id"] in self.fake.deleted:
            return error(404, 10008, "Unknown Message")
        own = message["author"]["id"] == o.BOT_ID
        if request.method == "DELETE":
            if not own:
                return error(403, 50013, "Missing Permissions")
            self.fake.deleted.add(message["id"])
            return 204, None, None
        if request.method == "PATCH":
            if not own:
                return error(403, 50005, "Cannot edit a message authored by another user")
            invalid = self.fake.invalid(body, files, editing=True)
            if invalid:
                return 400, invalid, None
            self.fake.edit_message(message, body, files)
        return 200, message, None

    async def thread_from_message(self, request: web.Request, body: dict, files: list) -> Result:
        channel, failure = self._channel(request)
        if failure:
            return failure
        if channel["type"] not in (o.GUILD_TEXT, o.GUILD_ANNOUNCEMENT):
            return error(400, 50024, "Cannot execute action on this channel type")
        message = self.fake.messages.get(request.match_info["message"])
        if message is None or message["channel_id"] != channel["id"] or message["id"] in self.fake.deleted:
            return error(404, 10008, "Unknown Message")
        if message["id"] in self.fake.channels:
            return error(400, 160004, "A thread has already been created for this message")
        return await self._open_thread(channel, message["id"], body)

    async def thread(self, request: web.Request, body: dict, files: list) -> Result:
        channel, failure = self._channel(request)
        if failure:
            return failure
        if channel.get("type") == o.DM:  # as Discord: no threads in a direct message
            return error(400, 50024, "Cannot execute action on this channel type")
        if body.get("type") == o.PRIVATE_THREAD and not self.fake.private_threads_allowed:
            return error(403, 50013, "Missing Permissions")
        return await self._open_thread(channel, o.snowflake(), body)

    async def open_dm(self, request: web.Request, body: dict, files: list) -> Result:
        """The bot's direct-message channel with a user: the one that exists, or a new one."""
        recipient = str(body.get("recipient_id") or "")
        found = next(
            (
                c
                for c in self.fake.channels.values()
                if c.get("type") == o.DM and any(u.get("id") == recipient for u in c.get("recipients") or [])
            ),
            None,
        )
        if found is None:
            found = {
                "id": o.snowflake(),
                "type": o.DM,
                "last_message_id": None,
                "flags": 0,
                "recipients": [{"id": recipient, "username": "user"}],
            }
            self.fake.channels[found["id"]] = found
        return 200, found, None

    async def _open_thread(self, parent: dict, thread_id: str, body: dict) -> Result:
        name = str(body.get("name") or "")
        if not 1 <= len(name) <= THREAD_NAME:
            return error(
                400,
                50035,
                "Invalid Form Body",
                {
                    "name": {
                        "_errors": [
                            {
                                "code": "BASE_TYPE_BAD_LENGTH",
                                "message": f"Must be between 1 and {THREAD_NAME} in length.",
                            }
                        ]
                    }
                },
            )
        kind = o.PRIVATE_THREAD if body.get("type") == o.PRIVATE_THREAD else o.PUBLIC_THREAD
        created = o.thread(thread_id, parent, name, int(body.get("auto_archive_duration") or 1440), kind)
        self.fake.channels[thread_id] = created
        if thread_id in self.fake.messages:
            self.fake.messages[thread_id]["thread"] = created
        if any(g["id"] == parent.get("guild_id") for g in self.fake.guilds):
            await self.fake.dispatch("THREAD_CREATE", {**created, "newly_created": True})
        return 201, created, thread_id


async def _read_body(request: web.Request) -> tuple[Any, list[dict[str, Any]]]:
    if request.content_type.startswith("multipart/"):
        payload, files = None, []
        reader = await request.multipart()
        async for part in reader:
            if part.name == "payload_json":
                payload = json.loads(await part.text())
            else:
                data = await part.read()
                files.append(
                    {
                        "field": part.name,
                        "name": part.filename,
                        "size": len(data),
                        "content_type": part.headers.get("Content-Type"),
                        "data": bytes(data),
                    }
                )
        return payload, files
    text = await request.text()
    return (json.loads(text) if text else None), []


def _command_problems(command: dict[str, Any]) -> dict[str, Any]:
    problems: dict[str, Any] = {}
    if not COMMAND_NAME.match(command.get("name", "")):
        problems["name"] = {"_errors": [{"code": "APPLICATION_COMMAND_INVALID_NAME"}]}
    if command.get("type", 1) == 1 and not 1 <= len(command.get("description", "")) <= 100:
        problems["description"] = {"_errors": [{"code": "BASE_TYPE_BAD_LENGTH"}]}
    options = command.get("options") or []
    if len(options) > 25:
        problems["options"] = {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH"}]}
    for index, option in enumerate(options):
        nested = _command_problems({**option, "type": 1})
        if nested:
            problems.setdefault("options", {})[str(index)] = nested
    return problems
