"""A leaderboard's problem page and its downloads, and its ranking across GPUs (a column per GPU).

The problem page is what a newcomer reads first: the statement (the problem's description, Markdown rendered with
raw HTML off), the test and benchmark shapes, the GPUs, the deadline and challenge, the top three on each GPU, the
reference files and templates to download, and the command lines that submit to it from each front end. It is
public, like rankings: ``task``, ``template``, ``show`` and ``challenges`` are ``Access.PUBLIC``.
"""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt
from starlette.requests import Request
from starlette.responses import Response

from adapters.api.web_common import Asking, page, refused
from core.contracts.messages import CommandKind, PartKind, Reply, Tone
from core.contracts.reply_parts import format_spec

_MARKDOWN = MarkdownIt("commonmark", {"html": False})  # a statement's raw HTML is shown as text, never run
_PLAIN = {"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"}


class ProblemPages(Asking):
    async def problem(self, request: Request) -> Response:
        name = request.path_params["leaderboard"]
        task = await self._data(request, CommandKind.TASK, leaderboard=name)
        if isinstance(task, Response):
            return task
        about = task.data
        top = await self._ask_quietly(request, CommandKind.SHOW, leaderboard=about["leaderboard"], limit="3")
        listed = await self._ask_quietly(request, CommandKind.CHALLENGES)
        challenges = [ch for ch in listed.get("challenges", []) if about["leaderboard"] in ch["leaderboards"]]
        return page(
            request,
            "problem.html",
            title=about["leaderboard"],
            about=about,
            statement=_MARKDOWN.render(about["description"]),
            tests=[format_spec(spec) for spec in about["tests"]],
            benchmarks=[format_spec(spec) for spec in about["benchmarks"]],
            top=top.get("rankings", {}),
            challenges=challenges,
            files=[part.filename for part in task.parts if part.kind is PartKind.CODE and part.filename],
            suffix=".cu" if about["lang"] == "cu" else ".py",
        )

    async def file(self, request: Request) -> Response:
        """One of the problem's files (its reference, its task), as plain text to save."""
        name, wanted = request.path_params["leaderboard"], request.path_params["name"]
        task = await self._data(request, CommandKind.TASK, leaderboard=name)
        if isinstance(task, Response):
            return task
        for part in task.parts:
            if part.kind is PartKind.CODE and part.filename == wanted:
                return _download(part.filename, part.text)
        return refused(request, "Not here", f"{name} has no file {wanted[:60]!r}; its page lists its files.", 404)

    async def template(self, request: Request) -> Response:
        name, lang = request.path_params["leaderboard"], request.path_params["lang"]
        found = await self._data(request, CommandKind.TEMPLATE, leaderboard=name, lang=lang)
        if isinstance(found, Response):
            return found
        return _download(found.data["filename"], found.data["source"])

    async def across_gpus(self, request: Request) -> Response:
        """Each person's best on each GPU, a column per GPU: the rows in order of their best rank anywhere (then the
        GPUs they entered)."""
        shown = await self._data(request, CommandKind.SHOW, leaderboard=request.path_params["leaderboard"], limit="500")
        if isinstance(shown, Response):
            return shown
        gpus = list(shown.data["rankings"])
        people: dict[int, dict[str, Any]] = {}
        for gpu, rows in shown.data["rankings"].items():
            for row in rows:
                person = people.setdefault(row["person_id"], {"person_id": row["person_id"], "name": row["name"]})
                person[gpu] = row
        order = sorted(people.values(), key=lambda p: (min(p[g]["rank"] for g in gpus if g in p), -len(p)))
        return page(
            request,
            "across_gpus.html",
            title=f"{shown.data['leaderboard']} on every GPU",
            leaderboard=shown.data["leaderboard"],
            gpus=gpus,
            people=order,
        )

    async def _ask_quietly(self, request: Request, kind: CommandKind, **args: str) -> dict[str, Any]:
        """A part of a page that may be missing (no GPU yet, the core slow): its data, or nothing."""
        reply = await self._data(request, kind, **args)
        return reply.data if isinstance(reply, Reply) and reply.tone is not Tone.ERROR else {}


def _download(name: str, text: str) -> Response:
    safe = "".join(c for c in name if c.isalnum() or c in "._-") or "file.txt"
    return Response(text, headers={**_PLAIN, "Content-Disposition": f'attachment; filename="{safe}"'})
