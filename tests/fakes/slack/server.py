"""A fake Slack on loopback: the Web API, file hosting, uploads, response URLs and Socket Mode.

It runs an aiohttp server on its own event loop in a daemon thread (like a remote server, it shares
nothing with the code under test) and records every call it receives, in order, as a ``Call``:

==========================  ========================================================================
``method``                  what was called
==========================  ========================================================================
``auth.test`` ...           a Web API method (``POST /api/<method>``, params from query and body)
``file.download``           ``GET`` of a file's ``url_private_download`` (params: ``file``)
``file.upload``             the bytes posted to an ``upload_url`` (params: ``file_id``, ``bytes``)
``response_url``            a post to a slash command's or action's ``response_url`` (params: the JSON)
``socket.open``             a Socket Mode WebSocket connection
``socket.ack``              a Socket Mode acknowledgement (params: the ack, with ``envelope_id``)
==========================  ========================================================================

Run as its own process, it hosts files posted to ``/_fake/files/NAME`` (not recorded; tests in-process
call ``add_file``).

Answers follow Slack's wire format: HTTP 200 with ``{"ok": false, "error": ...}`` for API errors, 429 with
``Retry-After`` when rate limited, the login page (200, HTML) for a file fetched with a wrong token.
Faults can be injected per method (``fail``); channels can be closed to the bot (``deny_channel``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from tests.fakes.slack.calls import Call
from tests.fakes.slack.socket_mode import SocketMode

JSON_PARAMS = ("blocks", "attachments", "view", "files", "metadata")  # sent as JSON strings in form bodies
LOGIN_PAGE = "<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>"


@dataclass
class Fault:
    error: str
    status: int = 200
    times: int = 1
    retry_after: int | None = None
    when: dict[str, str] = field(default_factory=dict)  # only calls whose params match these


class FakeSlack:
    def __init__(
        self,
        *,
        bot_token: str = "xoxb-fake-bot-token",
        app_token: str = "xapp-fake-app-token",
        team_id: str = "T0KERNEL",
        bot_user_id: str = "U0KRBOT",
        record: Path | None = None,
    ) -> None:
        self.bot_token, self.app_token = bot_token, app_token
        self.team_id, self.bot_user_id = team_id, bot_user_id
        self.host, self.port = "127.0.0.1", 0
        self._record = record
        self._calls: list[Call] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._faults: dict[str, list[Fault]] = {}
        self._denied: set[str] = set()
        self.files: dict[str, dict[str, Any]] = {}
        self.file_bytes: dict[str, bytes] = {}
        self.uploads: dict[str, dict[str, Any]] = {}
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self._socket_mode = SocketMode(self._log, self._ids)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # ----- lifecycle ----------------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeSlack:
        self.host = host
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._runner = web.AppRunner(self._web_app(), access_log=None)
                loop.run_until_complete(self._runner.setup())
                loop.run_until_complete(web.TCPSite(self._runner, host, port).start())
                self.port = self._runner.addresses[0][1]
            except BaseException as exc:  # report it to start(), not to a thread nobody watches
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name="fake-slack", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._socket_mode.close(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = self._thread = None

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_url(self) -> str:
        return self.base_url + "/api/"

    # ----- what tests set up ----------------------------------------------------------------------

    def add_file(
        self, name: str, content: bytes, *, user: str = "U0ALICE", mimetype: str = "text/x-python", **overrides: Any
    ) -> dict[str, Any]:
        """Host a file as Slack would after an upload; returns its file object (as in events and files.info)."""
        file_id = f"F{next(self._ids):08d}"
        url = f"{self.base_url}/files-pri/{self.team_id}-{file_id}"
        info = {
            "id": file_id,
            "created": int(time.time()),
            "timestamp": int(time.time()),
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "pretty_type": "Python",
            "user": user,
            "user_team": self.team_id,
            "editable": True,
            "size": len(content),
            "mode": "snippet",
            "is_external": False,
            "external_type": "",
            "is_public": False,
            "public_url_shared": False,
            "display_as_bot": False,
            "username": "",
            "url_private": f"{url}/{name}",
            "url_private_download": f"{url}/download/{name}",
            "permalink": f"https://kernelrank-test.slack.com/files/{user}/{file_id}/{name}",
            "permalink_public": f"https://slack-files.com/{self.team_id}-{file_id}-0123456789",
            "is_starred": False,
            "has_rich_preview": False,
            "file_access": "visible",
            **overrides,
        }
        self.files[file_id] = info
        self.file_bytes[file_id] = content
        return dict(info)

    def add_user(self, user_id: str, display_name: str, *, real_name: str = "", is_admin: bool = False) -> None:
        self.users[user_id] = {
            "display_name": display_name,
            "real_name": real_name or display_name,
            "is_admin": is_admin,
        }

    def response_url(self, name: str = "") -> str:
        return f"{self.base_url}/commands/{self.team_id}/{name or next(self._ids)}/x0Yz"

    def fail(
        self,
        method: str,
        error: str = "internal_error",
        *,
        status: int = 200,
        times: int = 1,
        retry_after: int | None = None,
        **when: str,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` (whose params match ``when``) with an error."""
        with self._lock:
            self._faults.setdefault(method, []).append(Fault(error, status, times, retry_after, dict(when)))

    def deny_channel(self, channel: str) -> None:
        """The bot is not a member of ``channel``: posting there answers ``not_in_channel``."""
        self._denied.add(channel)

    # ----- what tests look at --------------------------------------------------------------------

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def calls_to(self, method: str, **where: Any) -> list[Call]:
        return [c for c in self.calls if c.method == method and all(c.params.get(k) == v for k, v in where.items())]

    async def wait_for(self, method: str, count: int = 1, timeout_s: float = 30.0, **where: Any) -> list[Call]:
        """The calls of ``method`` once there are ``count`` of them (polling; raises ``TimeoutError``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.calls_to(method, **where)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                seen = ", ".join(c.method for c in self.calls)
                raise TimeoutError(f"waited {timeout_s:g} s for {count} {method} call(s) {where or ''}; saw: {seen}")
            await asyncio.sleep(0.05)

    def send_envelope(
        self, kind: str, payload: dict[str, Any], *, retry_attempt: int = 0, timeout_s: float = 10.0
    ) -> dict[str, Any]:
        """Push a Socket Mode envelope to the connected app and wait for its ack (blocking; call it from a
        thread, e.g. ``asyncio.to_thread``)."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(
            self._socket_mode.send(kind, payload, retry_attempt), self._loop
        ).result(timeout_s)

    # ----- the server --------------------------------------------------------------------------

    def _web_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_get("/files-pri/{ref}/download/{name}", self._download)
        app.router.add_get("/files-pri/{ref}/{name}", self._download)
        app.router.add_post("/upload/v1/{file_id}", self._upload)
        app.router.add_post("/commands/{team}/{name}/{secret}", self._response_url)
        app.router.add_post("/actions/{team}/{name}/{secret}", self._response_url)
        app.router.add_get("/link/", self._socket_mode.serve)
        app.router.add_post("/_fake/files/{name}", self._host_file)  # for a fake run as its own process
        return app

    def _log(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)
            if self._record is not None:
                with self._record.open("a") as out:
                    out.write(json.dumps(call.to_json(), default=str) + "\n")

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        auth = self._auth(request, params)
        params.pop("token", None)
        self._log(Call(method, params, auth))
        fault = self._fault(method, params)
        if fault is not None:
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            return web.json_response({"ok": False, "error": fault.error}, status=fault.status, headers=headers)
        wanted = "app" if method == "apps.connections.open" else "bot"
        if auth != wanted:
            return web.json_response({"ok": False, "error": "not_authed" if auth == "none" else "invalid_auth"})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        return web.json_response(handler(params))

    def _auth(self, request: web.Request, params: dict[str, Any]) -> str:
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else params.get("token", "")
        if not token:
            return "none"
        return {self.bot_token: "bot", self.app_token: "app"}.get(token, "wrong")

    def _fault(self, method: str, params: dict[str, Any]) -> Fault | None:
        with self._lock:
            for fault in self._faults.get(method, []):
                if fault.times > 0 and all(str(params.get(k)) == v for k, v in fault.when.items()):
                    fault.times -= 1
                    return fault
        return None

    def _ts(self) -> str:
        return f"{int(time.time())}.{next(self._ids):06d}"

    # ----- Web API methods (the ones kernelrank calls) -------------------------------------------

    def _m_auth_test(self, _: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://kernelrank-test.slack.com/",
            "team": "kernelrank test",
            "user": "kernelrank",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": "B0KRBOT",
            "is_enterprise_install": False,
        }

    def _m_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user_id = str(params.get("user", ""))
        if user_id[:1] not in ("U", "W"):
            return {"ok": False, "error": "user_not_found"}
        known = self.users.get(user_id, {"display_name": "", "real_name": user_id.title(), "is_admin": False})
        return {
            "ok": True,
            "user": {
                "id": user_id,
                "team_id": self.team_id,
                "name": user_id.lower(),
                "deleted": False,
                "real_name": known["real_name"],
                "tz": "Europe/London",
                "is_admin": known["is_admin"],
                "is_owner": False,
                "is_bot": False,
                "is_app_user": False,
                "updated": int(time.time()),
                "profile": {
                    "display_name": known["display_name"],
                    "real_name": known["real_name"],
                    "display_name_normalized": known["display_name"],
                    "team": self.team_id,
                },
            },
        }

    def _m_conversations_open(self, params: dict[str, Any]) -> dict[str, Any]:
        users = str(params.get("users", ""))
        return {"ok": True, "channel": {"id": "D" + users.split(",")[0][1:]}}

    def _m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel", ""))
        if channel in self._denied:
            return {"ok": False, "error": "not_in_channel"}
        ts = self._ts()
        message = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": "B0KRBOT",
            "text": params.get("text", ""),
            "blocks": params.get("blocks", []),
            "ts": ts,
            "thread_ts": params.get("thread_ts"),
        }
        self.messages[(channel, ts)] = message
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel", "")), str(params.get("ts", "")))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        self.messages[key].update(text=params.get("text", ""), blocks=params.get("blocks", []))
        return {"ok": True, "channel": key[0], "ts": key[1], "text": params.get("text", "")}

    def _m_chat_delete(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel", "")), str(params.get("ts", "")))
        if self.messages.pop(key, None) is None:
            return {"ok": False, "error": "message_not_found"}
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def _m_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        if str(params.get("channel", "")) in self._denied:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "message_ts": self._ts()}

    def _m_views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        view = params.get("view") or {}
        return {
            "ok": True,
            "view": {
                **view,
                "id": f"V{next(self._ids):08d}",
                "hash": f"{int(time.time())}.h0sh",
                "team_id": self.team_id,
                "app_id": "A0KERNEL",
                "bot_id": "B0KRBOT",
                "state": {"values": {}},
            },
        }

    def _m_views_update(self, params: dict[str, Any]) -> dict[str, Any]:
        view = params.get("view") or {}
        return {
            "ok": True,
            "view": {**view, "id": params.get("view_id"), "hash": f"{int(time.time())}.h1sh", "state": {"values": {}}},
        }

    def _m_files_info(self, params: dict[str, Any]) -> dict[str, Any]:
        info = self.files.get(str(params.get("file", "")))
        if info is None:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "file": info, "comments": [], "response_metadata": {"next_cursor": ""}}

    def _m_files_getUploadURLExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        file_id = f"F{next(self._ids):08d}"
        self.uploads[file_id] = {"filename": params.get("filename"), "length": params.get("length"), "content": b""}
        return {"ok": True, "upload_url": f"{self.base_url}/upload/v1/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        done = []
        for item in params.get("files") or []:
            upload = self.uploads.get(item.get("id"), {})
            upload.update(title=item.get("title"), channel=params.get("channel_id"), thread=params.get("thread_ts"))
            done.append({"id": item.get("id"), "title": item.get("title"), "name": upload.get("filename")})
        return {"ok": True, "files": done}

    def _m_apps_connections_open(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://{self.host}:{self.port}/link/?ticket={next(self._ids)}&app_id=A0KERNEL"}

    # ----- files, response URLs, Socket Mode ------------------------------------------------------

    async def _download(self, request: web.Request) -> web.Response:
        file_id = request.match_info["ref"].rsplit("-", 1)[-1]
        auth = self._auth(request, {})
        self._log(Call("file.download", {"file": file_id, "path": request.path}, auth))
        if auth != "bot":
            return web.Response(text=LOGIN_PAGE, content_type="text/html")
        if file_id not in self.file_bytes:
            return web.Response(status=404, text="Not Found")
        return web.Response(body=self.file_bytes[file_id], content_type="application/octet-stream")

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        content = await request.read()
        self._log(Call("file.upload", {"file_id": file_id, "bytes": len(content)}, "none"))
        if file_id not in self.uploads:
            return web.Response(status=404, text="Not Found")
        self.uploads[file_id]["content"] = content
        return web.Response(text=f"OK - {len(content)}")

    async def _host_file(self, request: web.Request) -> web.Response:
        """``POST /_fake/files/NAME?user=U...`` with the bytes: ``add_file`` from outside; answers the file object."""
        info = self.add_file(
            request.match_info["name"], await request.read(), user=request.query.get("user", "U0ALICE")
        )
        return web.json_response(info)

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        self._log(Call("response_url", {**body, "url": str(request.url)}, "none"))
        return web.Response(text="ok")


async def _params(request: web.Request) -> dict[str, Any]:
    """Query and body parameters merged, as Slack reads them (a method may get either)."""
    params: dict[str, Any] = dict(parse_qsl(request.query_string))
    if request.can_read_body:
        raw = await request.read()
        if request.content_type == "application/json":
            params.update(json.loads(raw or b"{}"))
        elif request.content_type == "multipart/form-data":
            raise web.HTTPBadRequest(text="multipart is not used by the methods kernelrank calls")
        else:
            params.update(parse_qsl(raw.decode()))
    for key in JSON_PARAMS:
        if isinstance(params.get(key), str):
            with contextlib.suppress(ValueError):
                params[key] = json.loads(params[key])
    return params
