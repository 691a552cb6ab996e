"""The public web leaderboard, served by the API process: server-rendered HTML (Jinja2), no JavaScript needed.

Every page gets its data by sending a registry command to the core (``list``, ``show``, ``person``, ``challenges``,
``challenge``, ``submission``, ``token whoami``) and renders ``Reply.data``; it never touches the bus's subjects or the
database. Rankings, people and challenges are public (``Access.PUBLIC``): no token needed. A submission's page needs
its author or an admin: they sign in with a personal token through a form, which keeps it in an HttpOnly,
SameSite=Strict cookie (never in a page, a URL or a log) and sends its SHA-256 with each command, as the JSON API
does with a bearer token.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CppLexer, PythonLexer
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from adapters.api.answers import STATUS
from adapters.api.svg import progress_chart
from core.contracts.commands import query_command
from core.contracts.messages import Actor, Command, CommandKind, Platform, Reply, ReplyTo, Tone, new_id
from core.contracts.reply_parts import format_us
from core.contracts.tokenformat import token_sha256

COOKIE = "kernelrank_token"
COOKIE_DAYS = 30
MEDALS = {1: "gold", 2: "silver", 3: "bronze"}
Ask = Callable[[Command], Awaitable[Reply | Response]]
_ACTOR = Actor(platform=Platform.WEB, user_id="")
_FORMATTER = HtmlFormatter(cssclass="src", style="default")

templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.filters["us"] = lambda value: "-" if value is None else format_us(value)
templates.filters["url"] = lambda value: quote(str(value), safe="")
templates.globals["medal"] = lambda rank: MEDALS.get(rank)


def time_left(deadline: str, verb: str = "closes", past: str = "closed") -> str:
    """``closes in 2 days 4 hours`` (or ``closed``) for an ISO 8601 deadline."""
    left = datetime.fromisoformat(deadline) - datetime.now(UTC)
    if left.total_seconds() <= 0:
        return past
    days, hours, minutes = left.days, left.seconds // 3600, left.seconds % 3600 // 60
    units = [(days, "day"), (hours, "hour")] if days else [(hours, "hour"), (minutes, "minute")]
    words = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in units if n]
    return f"{verb} in {' '.join(words)}" if words else f"{verb} in under a minute"


templates.filters["time_left"] = time_left
templates.filters["opens_in"] = lambda opening: time_left(opening, "opens", "open")
templates.filters["utc"] = lambda moment: f"{moment[:16].replace('T', ' ')} UTC"


def web_routes(ask: Ask) -> list[Route]:
    pages = _Pages(ask)
    return [
        Route("/", pages.home),
        Route("/leaderboards/{leaderboard}/{gpu}", pages.ranking),
        Route("/people/{person:int}", pages.person),
        Route("/challenges/{title:path}", pages.challenge),
        Route("/submissions/{id:int}", pages.submission),
        Route("/sign-in", pages.sign_in_form),
        Route("/sign-in", pages.sign_in, methods=["POST"]),
        Route("/sign-out", pages.sign_out, methods=["POST"]),
    ]


class _Pages:
    def __init__(self, ask: Ask) -> None:
        self._ask = ask

    async def home(self, request: Request) -> Response:
        listed = await self._data(request, CommandKind.LIST)
        if isinstance(listed, Response):
            return listed
        challenges = await self._data(request, CommandKind.CHALLENGES)
        if isinstance(challenges, Response):
            return challenges
        return _page(
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
        return _page(request, "challenge.html", title=shown.data["challenge"], ch=shown.data)

    async def ranking(self, request: Request) -> Response:
        board, gpu = request.path_params["leaderboard"], request.path_params["gpu"]
        shown = await self._data(request, CommandKind.SHOW, leaderboard=board, gpu=gpu, limit="500")
        if isinstance(shown, Response):
            return shown
        (rows,) = shown.data["rankings"].values()
        return _page(
            request,
            "ranking.html",
            title=f"{shown.data['leaderboard']} on {gpu}",
            leaderboard=shown.data["leaderboard"],
            gpu=gpu,
            rows=rows,
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
        return _page(request, "person.html", title=data["name"], person=data, charts=charts)

    async def submission(self, request: Request) -> Response:
        number = request.path_params["id"]
        if not request.cookies.get(COOKIE):
            return _page(
                request,
                "refused.html",
                status=401,
                title=f"Submission #{number}",
                message=f"Submission #{number}'s details are for its author and admins: sign in with your "
                "personal token to see them.",
                sign_in=True,
            )
        shown = await self._data(request, CommandKind.SUBMISSION, id=str(number))
        if isinstance(shown, Response):
            return shown
        data = shown.data
        if not data["details"]:
            why = " ".join(p.text for p in shown.parts if p.text and "someone else's" in p.text)
            return _page(request, "refused.html", status=403, title=f"Submission #{number}", message=why)
        return _page(
            request,
            "submission.html",
            title=f"Submission #{number}",
            sub=data,
            source=_highlighted(data["source"], data["file_name"]),
            diff=_diff(data),
            source_css=_FORMATTER.get_style_defs(".src"),
        )

    async def sign_in_form(self, request: Request) -> Response:
        return _page(request, "sign_in.html", title="Sign in", next=_local(request.query_params.get("next")))

    async def sign_in(self, request: Request) -> Response:
        async with request.form(max_files=0, max_fields=4) as form:
            token, after = str(form.get("token") or "").strip(), _local(str(form.get("next") or ""))
        if not token:
            return _page(
                request,
                "sign_in.html",
                status=400,
                title="Sign in",
                next=after,
                error="Paste your personal token: `/leaderboard token` in Discord or `/kernelrank token` "
                "in Slack makes one.",
            )
        whoami = await self._ask(_command(CommandKind.TOKEN, token_sha256(token), action="whoami"))
        if isinstance(whoami, Response) or whoami.tone is Tone.ERROR:
            return _page(
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

    async def _data(self, request: Request, kind: CommandKind, **args: str) -> Reply | Response:
        """The core's reply to ``kind``, sent as the signed-in person (or a visitor), or the error page."""
        token = request.cookies.get(COOKIE, "")
        reply = await self._ask(_command(kind, token_sha256(token) if token else "", **args))
        if isinstance(reply, Response):  # the core is unreachable: the JSON error says why
            return _page(
                request,
                "refused.html",
                status=reply.status_code,
                title="Unavailable",
                message="kernelrank could not reach its core just now; try again in a minute.",
            )
        if reply.tone is Tone.ERROR:
            message = " ".join(p.text for p in reply.parts if p.text)
            return _page(
                request,
                "refused.html",
                status=STATUS.get(str(reply.data.get("error")), 400),
                title="Not here",
                message=message,
                sign_in=reply.data.get("error") == "unauthenticated",
            )
        return reply


def _command(kind: CommandKind, sha: str, **args: str) -> Command:
    cmd = query_command(_ACTOR, ReplyTo(platform=Platform.WEB, channel=new_id()), kind, **args)
    cmd.credential_sha256 = sha
    return cmd


def _page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = templates.get_template(name).render(
        signed_in=bool(request.cookies.get(COOKIE)), path=request.url.path, **context
    )
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def _local(path: str | None) -> str:
    """Where to go after signing in: a path of this site only, never another site (an open redirect)."""
    return path if path and path.startswith("/") and not path.startswith("//") and "\\" not in path else "/"


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
