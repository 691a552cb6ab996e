"""The HTTP API's routes: one per route of each registry command (``core.contracts.registry``), and ``/v1/health``.

A command's route sends its command to the core with the route's path parameters, the arguments the route implies
(``DELETE /v1/tokens/{prefix}`` is ``token revoke``), and the command's declared arguments from the query string
(GET, DELETE) or a JSON object body (POST), by name, alias or short name; an argument the command does not declare is
refused on every route, so a typo is not silently ignored. ``POST /v1/submissions`` takes the same arguments as
``submit``'s entry, its kernel as multipart/form-data (the ``file`` field beside ``leaderboard``, ``gpu``...,
``mode``) or JSON (``file_name`` and ``source``, the kernel's text, beside the others); with
``Accept: text/event-stream`` it streams progress. A file argument may also be a JSON object
``{"name": ..., "base64": ...}`` (``admin create``'s problem), sent to the core as the command's attachment.
``GET /v1/health`` needs no token: is the API up, the core, which version? For operators, ``/v1/openapi.json`` describes
the routes (``adapters/api/openapi.py``, a page at ``/v1/docs``) and ``/metrics`` gives Prometheus its figures
(``adapters/api/metrics.py``).
Public commands (``Access.PUBLIC``: leaderboards, rankings, people) answer a request without an ``Authorization``
header as a visitor; visitors' answers are kept a second and made once for a crowd (``adapters/api/cache.py``). The
web pages (``adapters/api/web.py``) are served beside the routes, and popcorn-cli's routes (``adapters/api/popcorn.py``)
after them.
"""

from __future__ import annotations

import json
import logging
import re
import time
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
from adapters.api.arguments import command_arguments
from adapters.api.cache import PageCache
from adapters.api.limits import SMALL_BODY_BYTES, BodyLimit, submission_limit
from adapters.api.metrics import ReplyTimes, metrics_endpoint
from adapters.api.openapi import openapi_json, openapi_page
from adapters.api.popcorn import is_submission, popcorn_routes
from adapters.api.web import web_routes
from adapters.api.web_common import refused
from adapters.api.web_submit import WEB_SUBMIT
from core.contracts.bus import BusError, CoreUnavailable
from core.contracts.commands import MAX_PROBLEM_BYTES, query_command, submit_command
from core.contracts.config import Settings
from core.contracts.messages import Actor, Attachment, Command, CommandKind, Platform, Reply, ReplyTo, Tone, new_id
from core.contracts.registry import COMMANDS, Access, ArgKind, Spec
from core.contracts.registry import Route as CommandRoute
from core.contracts.tokenformat import token_sha256
from core.contracts.version import __version__

log = logging.getLogger(__name__)
_BEARER = re.compile(r"Bearer\s+([\x21-\x7e]{1,200})\s*", re.IGNORECASE)
_ACTOR = Actor(platform=Platform.CLI, user_id="")  # the core identifies API callers by their token alone
PROBLEM_UPLOADS = "/v1/admin/leaderboards"  # routes whose JSON body may carry a problem's files
SIGN_IN = (
    "Send your personal token as `Authorization: Bearer <token>`: get one with `/leaderboard token` in "
    "Discord or `/kernelrank token` in Slack, then run `kernelrank login`."
)
Handler = Callable[[Request], Awaitable[Response]]


class NoCredential(Exception):
    """The request carries no usable bearer token."""


def credential(request: Request, public: bool = False) -> str:
    """The SHA-256 of the request's bearer token: the token itself goes no further than this function. A
    ``public`` route asked without any ``Authorization`` header gets "" (a visitor); a malformed one is refused."""
    header = request.headers.get("authorization")
    if public and header is None:
        return ""
    match = _BEARER.fullmatch(header or "")
    if match is None:
        raise NoCredential
    return token_sha256(match.group(1))


def create_app(core: Core, settings: Settings) -> Starlette:
    api = _Api(core, settings)

    def limit_for(scope: Scope, content_type: str) -> int:
        if scope["method"] == "POST" and (
            scope["path"] in ("/v1/submissions", WEB_SUBMIT) or is_submission(scope["path"])
        ):
            return submission_limit(settings.max_source_bytes, content_type)
        if scope["method"] == "POST" and scope["path"].startswith(PROBLEM_UPLOADS):
            return MAX_PROBLEM_BYTES * 4 // 3 + SMALL_BODY_BYTES  # base64 inside JSON
        return SMALL_BODY_BYTES

    operators = [
        Route("/v1/health", api.health),
        Route("/v1/openapi.json", openapi_json),
        Route("/v1/docs", openapi_page),
        Route("/metrics", metrics_endpoint(api.request, api.times, lambda request: credential(request, public=True))),
    ]
    routes = [*operators, *web_routes(api.request, api)]
    for spec in COMMANDS:
        for route in spec.routes:
            endpoint = api.submit(spec) if spec.submission else api.command(spec, route)
            routes.append(Route(route.path, endpoint, methods=[route.method]))
    routes += popcorn_routes(core, api.request)  # last: their submission route takes any POST /A/B/C
    limits = Middleware(
        BodyLimit, limit_for=limit_for, max_source_bytes=settings.max_source_bytes, too_large=_too_large
    )
    handlers = {HTTPException: _http_error, NoCredential: _no_credential, Exception: _internal}
    return Starlette(routes=routes, exception_handlers=handlers, middleware=[Middleware(PageCache), limits])


class _Api:
    def __init__(self, core: Core, settings: Settings) -> None:
        self.core = core
        self.settings = settings
        self.times = ReplyTimes()  # the core's reply times, for /metrics

    def command(self, spec: Spec, route: CommandRoute) -> Handler:
        """An endpoint sending ``spec``'s command through ``route``."""

        async def endpoint(request: Request) -> Response:
            sha = credential(request, public=spec.access is Access.PUBLIC)  # before the body: no token, no work
            checked = command_arguments(spec, await self._arguments(request, route))
            if isinstance(checked, Response):
                return checked
            args, attachment = checked
            args.update(request.path_params)
            args.update(route.fixed)
            reply_route = new_id()
            cmd = query_command(_ACTOR, self._reply_to(reply_route), spec.kind, **args)
            cmd.attachment = attachment
            cmd.credential_sha256 = sha
            reply = await self.request(cmd)
            if isinstance(reply, Response):
                return reply
            if not reply.final and "text/event-stream" in request.headers.get("accept", ""):
                return stream(reply, reply_route, self.core)  # admin create: the reference's run decides
            return answer(reply, status=200 if reply.final else 202)

        return endpoint

    async def _arguments(self, request: Request, route: CommandRoute) -> dict[str, Any] | Response:
        """What the request gives: its query string (GET, DELETE) or its JSON object body (POST)."""
        if route.method != "POST":
            return dict(request.query_params)
        if not await request.body():  # a POST that needs no arguments (POST /v1/tokens) may send none
            return {}
        return await self._json_object(request)

    async def request(self, cmd: Command) -> Reply | Response:
        """The core's reply, or the error response that says why there is none (sent once: never retried here,
        since a submission that timed out may still have been stored)."""
        started = time.perf_counter()
        try:
            return await self.core.request(cmd, timeout_s=self.settings.request_timeout_s)
        except CoreUnavailable as exc:
            return error("unavailable", str(exc))
        except BusError as exc:
            log.warning("%s command %s failed on the bus: %s", cmd.kind.value, cmd.id, exc)
            return error("unavailable", "kernelrank could not reach its core just now; try again in a minute.")
        finally:
            self.times.observe(cmd.kind.value, time.perf_counter() - started)

    async def health(self, request: Request) -> Response:
        """Whether the API runs and the core answers (any answer counts: this probe carries no token)."""
        try:
            await self.core.request(query_command(_ACTOR, self._reply_to(), CommandKind.LIST), timeout_s=5)
        except BusError:
            return JSONResponse({"api": "ok", "core": "unavailable", "version": __version__}, status_code=503)
        return JSONResponse({"api": "ok", "core": "ok", "version": __version__})

    def submit(self, spec: Spec) -> Handler:
        """The endpoint of ``spec`` (``submit``): the kernel file and the entry's other arguments, as
        multipart/form-data or JSON; with ``Accept: text/event-stream``, its progress follows."""
        kernel = next(arg for arg in spec.args if arg.kind is ArgKind.FILE)

        async def endpoint(request: Request) -> Response:
            sha = credential(request)  # before the body: no token, no upload
            checked = command_arguments(spec, await self._submission(request, kernel.name))
            if isinstance(checked, Response):
                return checked
            args, attachment = checked
            if attachment is None:
                return error(
                    "invalid", f"Send the kernel: the form field `{kernel.name}`, or `file_name` and `source` in JSON."
                )
            route = new_id()
            cmd = submit_command(_ACTOR, self._reply_to(route), attachment.name, attachment.content, **args)
            cmd.credential_sha256 = sha
            accepted = await self.request(cmd)
            if isinstance(accepted, Response):
                return accepted
            if accepted.tone is Tone.ERROR or "text/event-stream" not in request.headers.get("accept", ""):
                return answer(accepted, status=202)
            return stream(accepted, route, self.core)

        return endpoint

    async def _submission(self, request: Request, field: str) -> dict[str, Any] | Response:
        """A submission's fields, the kernel's as ``field``: from multipart/form-data, or JSON."""
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            return await self._form(request)
        if content_type.startswith("application/json"):
            return await self._json_kernel(request, field)
        return error(
            "unsupported",
            f"Send the kernel as multipart/form-data (a `{field}` field) or as JSON with `file_name` and `source`.",
        )

    @staticmethod
    async def _form(request: Request) -> dict[str, Any] | Response:
        """The form's fields by name: an uploaded file as an ``Attachment``, a repeated field (``gpu``) as a list."""
        given: dict[str, Any] = {}
        async with request.form(max_files=1, max_fields=32) as form:
            for key in dict.fromkeys(form.keys()):
                values = [
                    Attachment(value.filename or "kernel.py", await value.read())
                    if isinstance(value, UploadFile)
                    else value
                    for value in form.getlist(key)
                ]
                given[key] = values[0] if len(values) == 1 else values
        return given

    async def _json_kernel(self, request: Request, field: str) -> dict[str, Any] | Response:
        """A JSON submission's fields, its ``file_name`` and ``source`` (the kernel's text) made the ``field``."""
        body = await self._json_object(request)
        if isinstance(body, Response) or ("file_name" not in body and "source" not in body):
            return body
        file_name, source = body.pop("file_name", None), body.pop("source", None)
        if not isinstance(file_name, str) or not isinstance(source, str):
            return error("invalid", "Send `file_name` and `source` (the kernel's text) as strings.")
        return {**body, field: Attachment(name=file_name, content=source.encode())}

    @staticmethod
    async def _json_object(request: Request) -> dict | Response:
        try:
            body = await request.json()
        except RecursionError:
            return error("invalid", "The body nests JSON too deeply; send one object of plain values.")
        except ValueError:
            return error("invalid", "The body is not valid JSON.")
        if not isinstance(body, dict):
            return error("invalid", "The body must be a JSON object.")
        try:  # JSON may escape a lone surrogate (\ud800), which is no character: no text can hold it
            json.dumps(body, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            return error(
                "invalid",
                "The body holds a lone surrogate escape (like \\ud800), which is not text; send the file as UTF-8.",
            )
        return body

    @staticmethod
    def _reply_to(route: str = "") -> ReplyTo:
        return ReplyTo(platform=Platform.CLI, channel=route or new_id())


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 413:
        return _too_large(request.scope, str(exc.detail))
    if exc.status_code == 404:
        return error(
            "not_found",
            f"There is no {request.method} {request.url.path} in the API; see docs/security.md for the routes.",
        )
    if exc.status_code == 405:
        return error("invalid", f"{request.url.path} does not take {request.method}.")
    return error("invalid", str(exc.detail))


def _too_large(scope: Scope, message: str) -> Response:
    """A body over its limit: the form's page says so to a browser, the JSON error to a program."""
    if scope["path"] == WEB_SUBMIT:
        return refused(Request(scope), "Submit", message, 413)
    return error("too_large", message)


async def _no_credential(request: Request, exc: Exception) -> Response:
    return error("unauthenticated", SIGN_IN)


async def _internal(request: Request, exc: Exception) -> Response:
    """Anything unforeseen: logged with its traceback by Starlette, answered with a sentence, never the details."""
    return error("internal", "Something went wrong in kernelrank's API; try again in a minute.")
