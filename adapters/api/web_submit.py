"""Submitting from the browser: the form, its POST, and the page that follows the runs until they end.

The form is built from the registry's ``submit`` entry, like every other front end: a file to upload or code to
paste, the leaderboard, its GPUs, the mode, and any further argument the entry declares as a text field. Its POST
becomes the same ``submit`` command the JSON API sends, so the core applies the same limits, rate limits and
refusals. It works without JavaScript: the answer is a redirect to a progress page that refreshes itself until every
run has its result, then goes on to the submission's page; with JavaScript, that page follows the runs' progress as
server-sent events instead (the lines the terminal prints).

Cross-site request forgery: the POST must carry the form token (``web_common.csrf_token``, derived from the HttpOnly
cookie, so no other site can know it) and, where the browser sends one, an ``Origin`` of this site. The progress
page's address carries the runs it follows, signed with the same cookie, so only the person who submitted follows
them.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator
from typing import Any, Protocol

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from adapters.api.answers import PING_S, STATUS, Core, run_replies
from adapters.api.arguments import command_arguments
from adapters.api.limits import MARGIN_BYTES
from adapters.api.web_common import COOKIE, Ask, Asking, csrf_token, error_page, page, refused, sentence, sha_of
from adapters.terminal import render, status_line
from core.contracts.commands import DEFAULT_MODE, MODES, submit_command
from core.contracts.config import Settings
from core.contracts.messages import Actor, Attachment, CommandKind, Platform, Reply, ReplyTo, Tone, new_id
from core.contracts.registry import BY_KIND, ArgKind

WEB_SUBMIT = "/submit"
SPEC = BY_KIND[CommandKind.SUBMIT]
SHOWN = ("file", "leaderboard", "gpu", "mode")  # the arguments the form lays out itself; others get a text field
WAITING = ("queued", "running")  # a run's status before its result
_ACTOR = Actor(platform=Platform.WEB, user_id="")  # the core knows the person by the cookie's token


class Submitting(Protocol):
    """What the form needs of the API process (``adapters.api.app._Api`` is one)."""

    core: Core
    settings: Settings

    async def request(self, cmd: Any) -> Reply | Response: ...


class SubmitPages(Asking):
    def __init__(self, ask: Ask, submitting: Submitting) -> None:
        super().__init__(ask)
        self._api = submitting

    async def form(self, request: Request) -> Response:
        if not request.cookies.get(COOKIE):
            return refused(request, "Submit", "Sign in with your personal token to submit a kernel.", 401, True)
        return await self._form(request, request.query_params.get("leaderboard", ""))

    async def _form(
        self, request: Request, wanted: str, error: str = "", status: int = 200, **headers: str
    ) -> Response:
        """The form, for the ``wanted`` leaderboard (with its GPUs) or to choose one; ``error`` says why it is back."""
        listed = await self._data(request, CommandKind.LIST)
        if isinstance(listed, Response):
            return listed
        boards = listed.data.get("leaderboards", [])
        board = next((b for b in boards if b["name"] == wanted), None)
        task = await self._data(request, CommandKind.TASK, leaderboard=board["name"]) if board else None
        suffix = ".cu" if isinstance(task, Reply) and task.data.get("lang") == "cu" else ".py"
        return page(
            request,
            "submit.html",
            status,
            headers,
            title=f"Submit to {board['name']}" if board else "Submit a kernel",
            boards=boards,
            board=board,
            modes=MODES,
            default_mode=DEFAULT_MODE,
            extra=[arg for arg in SPEC.args if arg.name not in SHOWN],
            file_name=f"submission{suffix}",
            max_kib=self._api.settings.max_source_bytes // 1024,
            error=error,
        )

    async def submit(self, request: Request) -> Response:
        if not request.cookies.get(COOKIE):
            return refused(request, "Submit", "Sign in with your personal token to submit a kernel.", 401, True)
        if not _same_origin(request):
            return _forged(request)
        limit = self._api.settings.max_source_bytes + MARGIN_BYTES
        async with request.form(max_files=1, max_fields=32, max_part_size=limit) as form:
            if not hmac.compare_digest(str(form.get("csrf") or ""), csrf_token(request)):
                return _forged(request)
            given = await _given(form)
        board = str(given.get("leaderboard") or "")
        checked = command_arguments(SPEC, given)
        if isinstance(checked, Response):
            return await self._form(
                request, board, json.loads(bytes(checked.body))["error"]["message"], checked.status_code
            )
        args, attachment = checked
        if attachment is None:
            return await self._form(request, board, "Choose your kernel's file or paste its code.", 400)
        route = new_id()
        cmd = submit_command(_ACTOR, ReplyTo(Platform.WEB, channel=route), attachment.name, attachment.content, **args)
        cmd.credential_sha256 = sha_of(request)
        accepted = await self._api.request(cmd)
        if isinstance(accepted, Response):
            return error_page(request, accepted)
        if accepted.tone is Tone.ERROR:
            code, retry = str(accepted.data.get("error")), accepted.data.get("retry_after_s")
            extra = {"Retry-After": str(retry)} if retry else {}
            return await self._form(request, board, sentence(accepted), STATUS.get(code, 400), **extra)
        number = accepted.data["submission_id"]
        runs = ".".join(run["run_id"] for run in accepted.data.get("runs", []))
        address = progress_address(request.cookies[COOKIE], number, route, runs)
        return RedirectResponse(address, status_code=303)

    async def live(self, request: Request) -> Response:
        """The runs' statuses, refreshed without JavaScript (a meta refresh) or followed as events with it; once
        every run has its result, the submission's page."""
        number = request.path_params["id"]
        shown = await self._data(request, CommandKind.SUBMISSION, id=str(number))
        if isinstance(shown, Response):
            return shown
        runs = shown.data["runs"]
        if all(run["status"] not in WAITING for run in runs):
            return RedirectResponse(f"/submissions/{number}", status_code=303)
        return page(
            request,
            "live.html",
            title=f"Submission #{number}: running",
            sub=shown.data,
            events=f"/submissions/{number}/events?{request.url.query}" if _followable(request, number) else "",
        )

    async def events(self, request: Request) -> Response:
        """The runs' progress and reports as the terminal prints them (``progress``, ``report``), then ``end``."""
        number = request.path_params["id"]
        if not _followable(request, number):
            return refused(request, "Not here", "Only the person who submitted follows these runs.", 403)
        route, runs = request.query_params["route"], set(request.query_params["runs"].split("."))
        return EventSourceResponse(self._lines(route, runs), ping=PING_S)

    async def _lines(self, route: str, runs: set[str]) -> AsyncIterator[ServerSentEvent]:
        async for reply in run_replies(self._api.core, route, runs, Platform.WEB):
            if reply.final:
                yield ServerSentEvent(event="report", data=json.dumps({"text": render(reply)}))
            else:
                yield ServerSentEvent(event="progress", data=json.dumps({"text": status_line(reply)}))
        yield ServerSentEvent(event="end", data="{}")


async def _given(form: Any) -> dict[str, Any]:
    """The registry arguments the form gave: the uploaded file, or else the pasted code under its file name; a field
    left empty is not given."""
    given: dict[str, Any] = {}
    for key in dict.fromkeys(form.keys()):
        if key in ("csrf", "source", "file_name"):
            continue
        values = [v for v in form.getlist(key) if not isinstance(v, UploadFile) and v.strip()]
        uploads = [v for v in form.getlist(key) if isinstance(v, UploadFile) and v.filename]
        arg = SPEC.arg(key)
        if uploads:
            given[key] = Attachment(str(uploads[0].filename), await uploads[0].read())
        elif values:  # GPUs are a list, even of one; any other repeated field is refused as not a plain value
            given[key] = values if len(values) > 1 or (arg is not None and arg.kind is ArgKind.GPUS) else values[0]
    pasted = str(form.get("source") or "")
    if "file" not in given and pasted.strip():
        given["file"] = Attachment(str(form.get("file_name") or "").strip() or "submission.py", pasted.encode())
    return given


def _same_origin(request: Request) -> bool:
    """A browser names the page a POST came from; one of another site is refused (an absent header passes: the form
    token still has to match)."""
    origin = request.headers.get("origin")
    return origin is None or origin == f"{request.url.scheme}://{request.url.netloc}"


def _forged(request: Request) -> Response:
    return refused(
        request,
        "Submit",
        "This form did not come from kernelrank's own submit page, so it was not sent; open the submit page and "
        "send your kernel from there.",
        403,
    )


def progress_address(token: str, number: int, route: str, runs: str) -> str:
    """The progress page of submission ``number`` whose ``runs`` (ids joined by dots) answer on ``route``, signed
    with the submitter's ``token``."""
    return f"/submissions/{number}/live?route={route}&runs={runs}&sig={_signature(token, number, route, runs)}"


def _signature(token: str, number: int, route: str, runs: str) -> str:
    return hmac.new(token.encode(), f"follow {number} {route} {runs}".encode(), "sha256").hexdigest()


def _followable(request: Request, number: int) -> bool:
    """Whether the address names runs this browser's person submitted (their signature matches the cookie)."""
    params = request.query_params
    route, runs, sig = params.get("route", ""), params.get("runs", ""), params.get("sig", "")
    return bool(route and runs and request.cookies.get(COOKIE)) and hmac.compare_digest(
        sig, _signature(request.cookies[COOKIE], number, route, runs)
    )
