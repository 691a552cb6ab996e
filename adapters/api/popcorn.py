"""popcorn-cli's routes, served beside ours so GPU MODE's own client works unchanged against kernelrank.

popcorn-cli (github.com/gpu-mode/popcorn-cli) talks to the GPU MODE bot's API at ``POPCORN_API_URL`` and signs in
with an ``X-Popcorn-Cli-Id`` header (the ``cli_id`` of ``~/.popcorn.yaml``). Here that header carries a kernelrank
personal token, so a person writes ``cli_id: <token>`` there (README, "From popcorn-cli"). The routes it uses,
mapped onto the registry's commands:

- ``GET /leaderboards``: ``list``; a JSON array of ``{name, description, task, deadline, gpu_types}``.
- ``GET /gpus/{leaderboard}``: the leaderboard's GPUs from ``list``, a JSON array of names.
- ``POST /{leaderboard}/{gpu}/{mode}``: ``submit`` (mode ``leaderboard`` is our ``ranked``), the kernel as the
  multipart field ``file``; answered as server-sent events: ``status`` while it runs (``{"status", "message"}``),
  then one ``result`` (``{"status": "success", "results": [...], "reports": [...]}``) or ``error``
  (``{"status": "error", "detail", "status_code"}``).
- ``POST /submission/{leaderboard}/{gpu}/{mode}``: the same, answered at once (202, ``details.id``).
- ``GET /user/submissions?leaderboard=``: ``mine``; ``GET /user/submissions/{id}``: ``submission``.
- ``GET /auth/init`` (``popcorn-cli register``): refused with the sentence that says how to sign in instead.
A refusal before the stream starts is its HTTP status with ``{"detail": sentence}``, which popcorn-cli prints.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adapters.api.answers import PING_S, STATUS, Core, sentence
from core.contracts.commands import query_command, submit_command
from core.contracts.messages import Actor, CommandKind, Platform, Reply, ReplyTo, Tone, new_id
from core.contracts.tokenformat import token_sha256

HEADER = "x-popcorn-cli-id"
_ACTOR = Actor(platform=Platform.CLI, user_id="")  # the core knows API callers by their token alone
SIGN_IN = (
    "Put your kernelrank personal token in ~/.popcorn.yaml as `cli_id: <token>` (get one with `kernelrank token` "
    "or `/leaderboard token` in Discord); popcorn-cli sends it as X-Popcorn-Cli-Id."
)
Ask = Callable[..., Awaitable[Reply | Response]]


def popcorn_routes(core: Core, ask: Ask) -> list[Route]:
    """The routes; ``ask(cmd)`` sends a command to the core and gives its reply, or the response saying why none
    came. They go after our own, so ``/v1/...`` never reaches the catch-all submission route."""
    routes = _Routes(core, ask)
    return [
        Route("/auth/init", _no_oauth, methods=["GET"]),
        Route("/leaderboards", routes.leaderboards, methods=["GET"]),
        Route("/gpus/{leaderboard}", routes.gpus, methods=["GET"]),
        Route("/user/submissions", routes.mine, methods=["GET"]),
        Route("/user/submissions/{id:int}", routes.submission, methods=["GET"]),
        Route("/submission/{leaderboard}/{gpu}/{mode}", routes.submit_queued, methods=["POST"]),
        Route("/{leaderboard}/{gpu}/{mode}", routes.submit_streamed, methods=["POST"]),
    ]


def is_submission(path: str) -> bool:
    """Whether a POST to ``path`` is one of popcorn-cli's submissions (its body may be as large as a kernel)."""
    parts = path.strip("/").split("/")
    return not path.startswith("/v1/") and (len(parts) == 3 or (len(parts) == 4 and parts[0] == "submission"))


def refused(status: int, detail: str) -> JSONResponse:
    """A refusal in the shape popcorn-cli (and FastAPI) use: ``{"detail": ...}``."""
    return JSONResponse({"detail": detail}, status_code=status)


async def _no_oauth(request: Request) -> Response:
    """``popcorn-cli register`` starts GPU MODE's OAuth here; kernelrank signs people in with personal tokens."""
    return refused(400, "kernelrank has no Discord or GitHub sign-in for popcorn-cli. " + SIGN_IN)


def _sha(request: Request, required: bool) -> str | Response:
    """The SHA-256 of the token in ``X-Popcorn-Cli-Id``; "" (a visitor) where it may be left out."""
    token = request.headers.get(HEADER, "").strip()
    if not token:
        return refused(401, SIGN_IN) if required else ""
    if len(token) > 200 or not token.isprintable():
        return refused(401, "The X-Popcorn-Cli-Id header is not a kernelrank token. " + SIGN_IN)
    return token_sha256(token)


class _Routes:
    def __init__(self, core: Core, ask: Ask) -> None:
        self.core = core
        self.ask = ask

    async def _query(self, request: Request, kind: CommandKind, required: bool, **args: Any) -> Reply | Response:
        sha = _sha(request, required)
        if isinstance(sha, Response):
            return sha
        cmd = query_command(_ACTOR, ReplyTo(Platform.CLI, new_id()), kind, **args)
        cmd.credential_sha256 = sha
        reply = await self.ask(cmd)
        return _refusal(reply) if isinstance(reply, Reply) and reply.tone is Tone.ERROR else reply

    async def leaderboards(self, request: Request) -> Response:
        reply = await self._query(request, CommandKind.LIST, required=False)
        if isinstance(reply, Response):
            return reply
        return JSONResponse([_board(b) for b in reply.data.get("leaderboards", [])])

    async def gpus(self, request: Request) -> Response:
        reply = await self._query(request, CommandKind.LIST, required=False)
        if isinstance(reply, Response):
            return reply
        name = request.path_params["leaderboard"].lower()
        board = next((b for b in reply.data.get("leaderboards", []) if b["name"].lower() == name), None)
        if board is None:
            return refused(404, f"There is no leaderboard {name[:60]!r}; GET /leaderboards lists them.")
        return JSONResponse(board["gpus"])

    async def mine(self, request: Request) -> Response:
        board = request.query_params.get("leaderboard", "")
        if not board:
            return refused(
                400, "Name the leaderboard: ?leaderboard=NAME (kernelrank lists submissions per leaderboard)."
            )
        limit = request.query_params.get("limit")
        reply = await self._query(request, CommandKind.MINE, required=True, leaderboard=board, limit=limit)
        if isinstance(reply, Response):
            return reply
        return JSONResponse([_mine_row(board, run) for run in reply.data.get("runs", [])])

    async def submission(self, request: Request) -> Response:
        sub_id = request.path_params["id"]
        reply = await self._query(request, CommandKind.SUBMISSION, required=True, id=str(sub_id))
        if isinstance(reply, Response):
            return reply
        data = reply.data
        return JSONResponse(
            {
                "id": sub_id,
                "leaderboard_id": 0,  # kernelrank names leaderboards; popcorn-cli only prints this
                "leaderboard_name": data.get("leaderboard", ""),
                "file_name": data.get("file_name", ""),
                "user_id": str(data.get("person_id", "")),
                "submission_time": data.get("submitted_at", ""),
                "done": all(run.get("status") not in (None, "queued", "running") for run in data.get("runs", [])),
                "code": data.get("source", ""),
                "runs": [_run_row(data.get("mode", ""), run) for run in data.get("runs", [])],
            }
        )

    async def submit_queued(self, request: Request) -> Response:
        accepted = await self._submit(request, "")
        if isinstance(accepted, Response):
            return accepted
        sub_id = accepted.data.get("submission_id")
        return JSONResponse({"details": {"id": sub_id, "job_status_id": sub_id}, "status": "accepted"}, 202)

    async def submit_streamed(self, request: Request) -> Response:
        route = new_id()
        accepted = await self._submit(request, route)
        if isinstance(accepted, Response):
            return accepted
        mode = request.path_params["mode"].lower()
        # popcorn-cli splits events at "\n\n": sse-starlette's default "\r\n" line ends would never split
        return EventSourceResponse(self._events(accepted, route, mode), ping=PING_S, sep="\n")

    async def _submit(self, request: Request, route: str) -> Reply | Response:
        """The kernel in the form's ``file`` field, sent as ``submit``; the core's acceptance or the refusal."""
        sha = _sha(request, required=True)
        if isinstance(sha, Response):
            return sha
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            return refused(415, "Send the kernel as multipart/form-data in the field `file`, as popcorn-cli does.")
        async with request.form(max_files=1, max_fields=4) as form:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                return refused(400, "Send the kernel in the multipart field `file`.")
            name, content = upload.filename or "submission.py", await upload.read()
        params = request.path_params
        cmd = submit_command(
            _ACTOR,
            ReplyTo(Platform.CLI, route or new_id()),
            name,
            content,
            leaderboard=params["leaderboard"],
            gpu=params["gpu"],
            mode=params["mode"],
        )
        cmd.credential_sha256 = sha
        accepted = await self.ask(cmd)
        if isinstance(accepted, Reply) and accepted.tone is Tone.ERROR:
            return _refusal(accepted)
        return accepted

    async def _events(self, accepted: Reply, route: str, mode: str) -> AsyncIterator[ServerSentEvent]:
        """``status`` per progress update, then one ``result`` holding every run's final reply."""
        waiting = {run["run_id"] for run in accepted.data.get("runs", [])}
        yield _sse("status", {"status": "processing", "message": sentence(accepted)})
        finals: list[Reply] = []
        replies = self.core.follow_replies(route)
        async with contextlib.aclosing(replies):
            async for reply in replies:
                if reply.in_reply_to not in waiting:
                    continue
                if not reply.final:
                    yield _sse("status", {"status": "processing", "message": sentence(reply)})
                    continue
                finals.append(reply)
                waiting.discard(reply.in_reply_to)
                if not waiting:
                    break
        yield _sse(
            "result",
            {
                "status": "success",
                "results": [_result(mode, reply) for reply in finals],
                "reports": [sentence(reply) for reply in finals],
            },
        )


def _sse(event: str, data: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(event=event, data=json.dumps(data, separators=(",", ":")), sep="\n")


def _refusal(reply: Reply) -> JSONResponse:
    return refused(STATUS.get(str(reply.data.get("error") or "internal"), 400), sentence(reply))


def _board(board: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard as the GPU MODE bot lists it (popcorn-cli reads ``name``, ``description`` and ``task``)."""
    return {
        "name": board["name"],
        "description": board.get("about", ""),
        "deadline": board.get("deadline"),
        "gpu_types": board.get("gpus", []),
        "task": {"description": board.get("about", ""), "version": board.get("version")},
    }


def _mine_row(board: str, run: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": run.get("submission_id"),
        "leaderboard_name": board,
        "file_name": run.get("file_name", ""),
        "submission_time": run.get("submitted_at", ""),
        "gpu_type": run.get("gpu"),
        "done": run.get("status") not in (None, "queued", "running"),
        "score": _seconds(run.get("score_us")),
    }


def _run_row(mode: str, run: dict[str, Any]) -> dict[str, Any]:
    return {
        "start_time": None,
        "end_time": None,
        "mode": "leaderboard" if mode == "ranked" else mode,
        "secret": False,
        "runner": run.get("gpu", ""),
        "score": _seconds(run.get("score_us")),
        "passed": run.get("status") == "passed",
    }


def _result(mode: str, reply: Reply) -> dict[str, Any]:
    """One run's final reply where the GPU MODE bot puts a run's outcome: ``runs[mode]["run"]``."""
    data = reply.data
    passed = reply.tone is not Tone.ERROR
    return {
        "success": passed,
        "gpu": data.get("gpu"),
        "submission_id": data.get("submission_id"),
        "score": _seconds(data.get("score_us")),
        "runs": {mode: {"run": {"success": passed, "passed": passed, "stdout": sentence(reply), "stderr": ""}}},
    }


def _seconds(score_us: float | None) -> float | None:
    """Scores in seconds, as the GPU MODE bot keeps them."""
    return None if score_us is None else score_us / 1e6
