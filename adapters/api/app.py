"""The routes, and the command each one sends to the core.

=======  =====================================  ===========  =============================================
method   path                                   command      query parameters / body
=======  =====================================  ===========  =============================================
GET      /v1/health                             (list)       none; no token needed: is the API up, the core?
GET      /v1/me                                 token        who the token belongs to
GET      /v1/leaderboards                       list
GET      /v1/leaderboards/{leaderboard}         show         gpu, limit
GET      /v1/leaderboards/{leaderboard}/mine    mine         gpu, limit
GET      /v1/leaderboards/{leaderboard}/history history      gpu, user (``discord:123`` or a name)
GET      /v1/leaderboards/{leaderboard}/task    task
GET      /v1/leaderboards/{leaderboard}/template template    lang
POST     /v1/submissions                        submit       multipart (file, leaderboard, gpu..., mode) or
                                                             JSON {file_name, source, leaderboard, gpus, mode};
                                                             ``Accept: text/event-stream`` streams progress
GET      /v1/submissions/{id}                   submission   (poll it for a submission's runs)
GET      /v1/queue                              queue
GET      /v1/stats                              stats
GET      /v1/eval-code                          eval-code
GET      /v1/tokens                             token list
POST     /v1/tokens                             token new    (shown once)
DELETE   /v1/tokens/{prefix}                    token revoke
POST     /v1/admin/tokens                       token issue  JSON {name}; admins only
=======  =====================================  ===========  =============================================
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from adapters.api.answers import Core, answer, error, stream
from adapters.api.limits import SMALL_BODY_BYTES, BodyLimit, submission_limit
from core.contracts.bus import BusError, CoreUnavailable
from core.contracts.commands import query_command, submit_command
from core.contracts.config import Settings
from core.contracts.messages import Actor, Command, CommandKind, Platform, Reply, ReplyTo, Tone, new_id
from core.contracts.tokenformat import token_sha256

log = logging.getLogger(__name__)
_BEARER = re.compile(r"Bearer\s+([\x21-\x7e]{1,200})\s*", re.IGNORECASE)
_ACTOR = Actor(platform=Platform.CLI, user_id="")     # the core identifies API callers by their token alone
SIGN_IN = ("Send your personal token as `Authorization: Bearer <token>`: get one with `/leaderboard token` in "
           "Discord or `/kernelrank token` in Slack, then run `kernelrank login`.")
Handler = Callable[[Request], Awaitable[Response]]


class NoCredential(Exception):
    """The request carries no usable bearer token."""


def credential(request: Request) -> str:
    """The SHA-256 of the request's bearer token: the token itself goes no further than this function."""
    match = _BEARER.fullmatch(request.headers.get("authorization", ""))
    if match is None:
        raise NoCredential
    return token_sha256(match.group(1))


def create_app(core: Core, settings: Settings) -> Starlette:
    api = _Api(core, settings)

    def limit_for(scope: Scope, content_type: str) -> int:
        if scope["method"] == "POST" and scope["path"] == "/v1/submissions":
            return submission_limit(settings.max_source_bytes, content_type)
        return SMALL_BODY_BYTES

    routes = [
        Route("/v1/health", api.health),
        Route("/v1/me", api.query(CommandKind.TOKEN, action="whoami")),
        Route("/v1/leaderboards", api.query(CommandKind.LIST)),
        Route("/v1/leaderboards/{leaderboard}", api.query(CommandKind.SHOW, "gpu", "limit")),
        Route("/v1/leaderboards/{leaderboard}/mine", api.query(CommandKind.MINE, "gpu", "limit")),
        Route("/v1/leaderboards/{leaderboard}/history", api.query(CommandKind.HISTORY, "gpu", "user")),
        Route("/v1/leaderboards/{leaderboard}/task", api.query(CommandKind.TASK)),
        Route("/v1/leaderboards/{leaderboard}/template", api.query(CommandKind.TEMPLATE, "lang")),
        Route("/v1/submissions", api.submit, methods=["POST"]),
        Route("/v1/submissions/{id}", api.query(CommandKind.SUBMISSION)),
        Route("/v1/queue", api.query(CommandKind.QUEUE)),
        Route("/v1/stats", api.query(CommandKind.STATS)),
        Route("/v1/eval-code", api.query(CommandKind.EVAL_CODE)),
        Route("/v1/tokens", api.query(CommandKind.TOKEN, action="list")),
        Route("/v1/tokens", api.query(CommandKind.TOKEN, action="new"), methods=["POST"]),
        Route("/v1/tokens/{prefix}", api.query(CommandKind.TOKEN, action="revoke"), methods=["DELETE"]),
        Route("/v1/admin/tokens", api.issue, methods=["POST"]),
    ]
    limits = Middleware(BodyLimit, limit_for=limit_for, max_source_bytes=settings.max_source_bytes)
    handlers = {HTTPException: _http_error, NoCredential: _no_credential, Exception: _internal}
    return Starlette(routes=routes, exception_handlers=handlers, middleware=[limits])


class _Api:
    def __init__(self, core: Core, settings: Settings) -> None:
        self.core = core
        self.settings = settings

    def query(self, kind: CommandKind, *params: str, **fixed: str) -> Handler:
        """An endpoint sending ``kind`` with the path's parameters, the named query parameters and ``fixed``."""

        async def endpoint(request: Request) -> Response:
            args: dict[str, Any] = {**request.path_params, **fixed}
            args.update({name: request.query_params[name] for name in params if name in request.query_params})
            return await self.ask(query_command(_ACTOR, self._reply_to(), kind, **args), credential(request))

        return endpoint

    async def ask(self, cmd: Command, sha: str) -> Response:
        cmd.credential_sha256 = sha
        reply = await self._request(cmd)
        return reply if isinstance(reply, Response) else answer(reply)

    async def _request(self, cmd: Command) -> Reply | Response:
        """The core's reply, or the error response that says why there is none (sent once: never retried here,
        since a submission that timed out may still have been stored)."""
        try:
            return await self.core.request(cmd, timeout_s=self.settings.request_timeout_s)
        except CoreUnavailable as exc:
            return error("unavailable", str(exc))
        except BusError as exc:
            log.warning("%s command %s failed on the bus: %s", cmd.kind.value, cmd.id, exc)
            return error("unavailable", "kernelrank could not reach its core just now; try again in a minute.")

    async def health(self, request: Request) -> Response:
        """Whether the API runs and the core answers (any answer counts: this probe carries no token)."""
        try:
            await self.core.request(query_command(_ACTOR, self._reply_to(), CommandKind.LIST), timeout_s=5)
        except BusError:
            return JSONResponse({"api": "ok", "core": "unavailable"}, status_code=503)
        return JSONResponse({"api": "ok", "core": "ok"})

    async def submit(self, request: Request) -> Response:
        sha = credential(request)          # before the body: no token, no upload
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            fields = await self._form(request)
        elif content_type.startswith("application/json"):
            fields = await self._json(request)
        else:
            return error("unsupported", "Send the kernel as multipart/form-data (a `file` field) or as JSON with "
                                        "`file_name` and `source`.")
        if isinstance(fields, Response):
            return fields
        file_name, content, leaderboard, gpus, mode = fields
        route = new_id()
        cmd = submit_command(_ACTOR, self._reply_to(route), file_name, content, leaderboard=leaderboard, gpus=gpus,
                             mode=mode)
        cmd.credential_sha256 = sha
        accepted = await self._request(cmd)
        if isinstance(accepted, Response):
            return accepted
        if accepted.tone is Tone.ERROR or "text/event-stream" not in request.headers.get("accept", ""):
            return answer(accepted, status=202)
        return stream(accepted, route, self.core)

    async def issue(self, request: Request) -> Response:
        sha = credential(request)
        body = await self._json_object(request)
        if isinstance(body, Response):
            return body
        name = body.get("name")
        if not isinstance(name, str):
            return error("invalid", 'Send the person\'s name as JSON, like {"name": "ada"}.')
        return await self.ask(query_command(_ACTOR, self._reply_to(), CommandKind.TOKEN, action="issue", name=name),
                              sha)

    async def _form(self, request: Request) -> tuple | Response:
        async with request.form(max_files=1, max_fields=32) as form:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                return error("invalid", "Attach the kernel file as the form field `file`.")
            content = await upload.read()
            texts = {key: value for key, value in form.multi_items() if isinstance(value, str)}
            gpus = [value for key, value in form.multi_items() if key == "gpu" and isinstance(value, str)]
            return (upload.filename or "kernel.py", content, texts.get("leaderboard", ""), gpus,
                    texts.get("mode", ""))

    async def _json(self, request: Request) -> tuple | Response:
        body = await self._json_object(request)
        if isinstance(body, Response):
            return body
        file_name, source, gpus = body.get("file_name"), body.get("source"), body.get("gpus", [])
        if not isinstance(file_name, str) or not isinstance(source, str):
            return error("invalid", "Send `file_name` and `source` (the kernel's text) as strings.")
        if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus):
            return error("invalid", '`gpus` must be a list of GPU names, like ["H100"].')
        leaderboard, mode = body.get("leaderboard", ""), body.get("mode", "")
        if not isinstance(leaderboard, str) or not isinstance(mode, str):
            return error("invalid", "`leaderboard` and `mode` must be strings.")
        return file_name, source.encode(), leaderboard, gpus, mode

    @staticmethod
    async def _json_object(request: Request) -> dict | Response:
        try:
            body = await request.json()
        except ValueError:
            return error("invalid", "The body is not valid JSON.")
        return body if isinstance(body, dict) else error("invalid", "The body must be a JSON object.")

    @staticmethod
    def _reply_to(route: str = "") -> ReplyTo:
        return ReplyTo(platform=Platform.CLI, channel=route or new_id())


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 413:
        return error("too_large", str(exc.detail))
    if exc.status_code == 404:
        return error("not_found", f"There is no {request.method} {request.url.path} in the API; see "
                                  "docs/security.md for the routes.")
    if exc.status_code == 405:
        return error("invalid", f"{request.url.path} does not take {request.method}.")
    return error("invalid", str(exc.detail))


async def _no_credential(request: Request, exc: Exception) -> Response:
    return error("unauthenticated", SIGN_IN)


async def _internal(request: Request, exc: Exception) -> Response:
    """Anything unforeseen: logged with its traceback by Starlette, answered with a sentence, never the details."""
    return error("internal", "Something went wrong in kernelrank's API; try again in a minute.")
