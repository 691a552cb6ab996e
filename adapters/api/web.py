"""The public web pages, served by the API process: server-rendered HTML (Jinja2), no JavaScript needed.

Every page gets its data by sending a registry command to the core (``list``, ``show``, ``person``, ``challenges``,
``challenge``, ``submission``, ``task``, ``template``, ``token whoami``) and renders ``Reply.data``
(``web_common``). Rankings, problems, people and challenges are public (``Access.PUBLIC``): no token needed. A
submission's page needs its author or an admin: they sign in with a personal token through a form. Problem pages and
the cross-GPU ranking are in ``web_problem``, submitting from the browser in ``web_submit``.
"""

from __future__ import annotations

import difflib
from typing import Any
from urllib.parse import urlencode

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CppLexer, PythonLexer
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from adapters.api.svg import progress_chart
from adapters.api.web_common import COOKIE, COOKIE_DAYS, Ask, Asking, command, local, page, refused
from adapters.api.web_problem import ProblemPages
from adapters.api.web_submit import SubmitPages, Submitting
from core.contracts.messages import CommandKind, Tone
from core.contracts.tokenformat import token_sha256

_FORMATTER = HtmlFormatter(cssclass="src", style="default")
RANKING_PAGE = 100  # rows of a ranking page (the viewer's own entry is added when it is on another page)


def web_routes(ask: Ask, submitting: Submitting) -> list[Route]:
    pages, problems, submit = _Pages(ask), ProblemPages(ask), SubmitPages(ask, submitting)
    return [
        Route("/", pages.home),
        Route("/leaderboards/{leaderboard}", problems.problem),
        Route("/leaderboards/{leaderboard}/across-gpus", problems.across_gpus),
        Route("/leaderboards/{leaderboard}/files/{name}", problems.file),
        Route("/leaderboards/{leaderboard}/templates/{lang}", problems.template),
        Route("/leaderboards/{leaderboard}/{gpu}", pages.ranking),
        Route("/people/{person:int}", pages.person),
        Route("/challenges/{title:path}", pages.challenge),
        Route("/submit", submit.form),
        Route("/submit", submit.submit, methods=["POST"]),
        Route("/submissions/{id:int}", pages.submission),
        Route("/submissions/{id:int}/live", submit.live),
        Route("/submissions/{id:int}/events", submit.events),
        Route("/sign-in", pages.sign_in_form),
        Route("/sign-in", pages.sign_in, methods=["POST"]),
        Route("/sign-out", pages.sign_out, methods=["POST"]),
    ]


class _Pages(Asking):
    async def home(self, request: Request) -> Response:
        listed = await self._data(request, CommandKind.LIST)
        if isinstance(listed, Response):
            return listed
        challenges = await self._data(request, CommandKind.CHALLENGES)
        if isinstance(challenges, Response):
            return challenges
        return page(
            request,
            "home.html",
            title="Leaderboards",
            boards=listed.data.get("leaderboards", []),
            challenges=challenges.data.get("challenges", []),
        )

    async def challenge(self, request: Request) -> Response:
        shown = await self._data(request, CommandKind.CHALLENGE, title=request.path_params["title"])
        if isinstance(shown, Response):
            return shown
        return page(request, "challenge.html", title=shown.data["challenge"], ch=shown.data)

    async def ranking(self, request: Request) -> Response:
        board, gpu = request.path_params["leaderboard"], request.path_params["gpu"]
        wanted = request.query_params.get("round", "")  # a past round, or all time
        number = request.query_params.get("page", "1")  # pages of RANKING_PAGE rows: a page costs what it shows
        shown = await self._data(
            request, CommandKind.SHOW, leaderboard=board, gpu=gpu, limit=str(RANKING_PAGE), page=number, round=wanted
        )
        if isinstance(shown, Response):
            return shown
        (rows,) = shown.data["rankings"].values()
        (more,) = shown.data["more"].values()
        (stick,) = shown.data.get("yardsticks", {gpu: {}}).values()
        return page(
            request,
            "ranking.html",
            title=f"{shown.data['leaderboard']} on {gpu}",
            leaderboard=shown.data["leaderboard"],
            gpu=gpu,
            round_words=shown.data.get("round"),
            rows=rows,
            compared=any(value is not None for value in stick.values()),
            pages=_page_links(shown.data["page"], more, wanted),
            page_size=RANKING_PAGE,
        )

    async def person(self, request: Request) -> Response:
        found = await self._data(request, CommandKind.PERSON, who=f"#{request.path_params['person']}")
        if isinstance(found, Response):
            return found
        data = found.data
        charts = [
            {
                "leaderboard": p["leaderboard"],
                "gpu": p["gpu"],
                "svg": progress_chart(
                    f"{data['name']}'s best on {p['leaderboard']} / {p['gpu']} over time", p["points"], f"chart-{i}"
                ),
            }
            for i, p in enumerate(data["progress"])
            if p["points"]
        ]
        return page(request, "person.html", title=data["name"], person=data, charts=charts)

    async def submission(self, request: Request) -> Response:
        number = request.path_params["id"]
        if not request.cookies.get(COOKIE):
            return refused(
                request,
                f"Submission #{number}",
                f"Submission #{number}'s details are for its author and admins: sign in with your "
                "personal token to see them.",
                401,
                sign_in=True,
            )
        shown = await self._data(request, CommandKind.SUBMISSION, id=str(number))
        if isinstance(shown, Response):
            return shown
        data = shown.data
        if not data["details"]:
            why = " ".join(p.text for p in shown.parts if p.text and "someone else's" in p.text)
            return refused(request, f"Submission #{number}", why, 403)
        return page(
            request,
            "submission.html",
            title=f"Submission #{number}",
            sub=data,
            source=_highlighted(data["source"], data["file_name"]),
            diff=_diff(data),
            source_css=_FORMATTER.get_style_defs(".src"),
        )

    async def sign_in_form(self, request: Request) -> Response:
        return page(request, "sign_in.html", title="Sign in", next=local(request.query_params.get("next")))

    async def sign_in(self, request: Request) -> Response:
        async with request.form(max_files=0, max_fields=4) as form:
            token, after = str(form.get("token") or "").strip(), local(str(form.get("next") or ""))
        if not token:
            return page(
                request,
                "sign_in.html",
                status=400,
                title="Sign in",
                next=after,
                error="Paste your personal token: `/leaderboard token` in Discord or `/kernelrank token` "
                "in Slack makes one.",
            )
        whoami = await self._ask(command(CommandKind.TOKEN, token_sha256(token), action="whoami"))
        if isinstance(whoami, Response) or whoami.tone is Tone.ERROR:
            return page(
                request,
                "sign_in.html",
                status=401,
                title="Sign in",
                next=after,
                error="That token is not valid (mistyped, revoked or from another kernelrank).",
            )
        done = RedirectResponse(after, status_code=303)
        done.set_cookie(
            COOKIE,
            token,
            max_age=COOKIE_DAYS * 86400,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return done

    async def sign_out(self, request: Request) -> Response:
        done = RedirectResponse("/", status_code=303)
        done.delete_cookie(COOKIE, path="/")
        return done


def _highlighted(source: str, file_name: str) -> str:
    lexer = CppLexer() if file_name.endswith((".cu", ".cuh", ".cpp", ".h")) else PythonLexer()
    return highlight(source, lexer, _FORMATTER)


def _diff(data: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(kind, line) of a unified diff against the author's previous submission; None when there is none."""
    before = data.get("previous")
    if not before:
        return None
    lines = difflib.unified_diff(
        before["source"].splitlines(),
        data["source"].splitlines(),
        f"#{before['submission_id']} {before['file_name']}",
        f"#{data['submission_id']} {data['file_name']}",
        lineterm="",
    )
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return [(kinds.get(line[:1], "same"), line) for line in lines]


def _page_links(number: int, more: bool, round_wanted: str) -> dict[str, str]:
    """The links to the ranking's previous and next pages ("previous", "next"), those that exist."""
    kept = {"round": round_wanted} if round_wanted else {}
    links = {"previous": "?" + urlencode(kept | {"page": number - 1})} if number > 1 else {}
    return links | ({"next": "?" + urlencode(kept | {"page": number + 1})} if more else {})
