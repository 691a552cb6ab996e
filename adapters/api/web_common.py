"""What every web page shares: the templates and their filters, the signed-in person's cookie, asking the core as
that person (or a visitor), and rendering a page or the page that says why not.

Pages send registry commands to the core and render ``Reply.data``; they never touch the bus's subjects or the
database. The personal token lives in an HttpOnly, SameSite=Strict cookie (never in a page, a URL or a log); each
command carries its SHA-256, as the JSON API's do with a bearer token.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from adapters.api.answers import STATUS
from core.contracts.commands import query_command
from core.contracts.messages import Actor, Command, CommandKind, Platform, Reply, ReplyTo, Tone, new_id
from core.contracts.reply_parts import format_us
from core.contracts.tokenformat import token_sha256

COOKIE = "kernelrank_token"
COOKIE_DAYS = 30
MEDALS = {1: "gold", 2: "silver", 3: "bronze"}
Ask = Callable[[Command], Awaitable[Reply | Response]]
_ACTOR = Actor(platform=Platform.WEB, user_id="")
_CSRF_LABEL = b"kernelrank web form"

templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.filters["us"] = lambda value: "-" if value is None else format_us(value)
templates.filters["url"] = lambda value: quote(str(value), safe="")
templates.globals["medal"] = lambda rank: MEDALS.get(rank)
templates.filters["times"] = lambda value: "-" if not value else f"{value:.2f}×"  # faster than the reference
templates.filters["share"] = lambda value: "-" if not value else f"{value:.0%}"  # of the speed of light


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


def csrf_token(request: Request) -> str:
    """The signed-in person's form token: derived from their cookie's token, which no other site can read, so a
    form built elsewhere cannot carry it; the same on every API replica, so nothing is stored."""
    secret = request.cookies.get(COOKIE, "").encode()
    return hmac.new(secret, _CSRF_LABEL, hashlib.sha256).hexdigest() if secret else ""


def page(
    request: Request, name: str, status: int = 200, headers: dict[str, str] | None = None, **context: Any
) -> HTMLResponse:
    html = templates.get_template(name).render(
        signed_in=bool(request.cookies.get(COOKIE)), path=request.url.path, csrf=csrf_token(request), **context
    )
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store", **(headers or {})})


def refused(
    request: Request, title: str, message: str, status: int, sign_in: bool = False, **headers: str
) -> HTMLResponse:
    return page(request, "refused.html", status, headers, title=title, message=message, sign_in=sign_in)


def local(path: str | None) -> str:
    """Where to go after signing in: a path of this site only, never another site (an open redirect)."""
    return path if path and path.startswith("/") and not path.startswith("//") and "\\" not in path else "/"


def command(kind: CommandKind, sha: str, **args: Any) -> Command:
    cmd = query_command(_ACTOR, ReplyTo(platform=Platform.WEB, channel=new_id()), kind, **args)
    cmd.credential_sha256 = sha
    return cmd


def sha_of(request: Request) -> str:
    """The SHA-256 of the signed-in person's token, or "" for a visitor."""
    token = request.cookies.get(COOKIE, "")
    return token_sha256(token) if token else ""


def error_page(request: Request, reply: Reply | Response) -> Response:
    """The page saying why the core gave no answer (unreachable) or refused the command."""
    if isinstance(reply, Response):  # the core is unreachable: the JSON error says why
        return refused(
            request, "Unavailable", "kernelrank could not reach its core just now; try again in a minute.", 503
        )
    code = str(reply.data.get("error"))
    retry = reply.data.get("retry_after_s")
    return refused(
        request,
        "Not here",
        sentence(reply),
        STATUS.get(code, 400),
        sign_in=code == "unauthenticated",
        **({"Retry-After": str(retry)} if retry else {}),
    )


def sentence(reply: Reply) -> str:
    return " ".join(p.text for p in reply.parts if p.text).strip()


class Asking:
    """Pages that ask the core as the signed-in person (or a visitor)."""

    def __init__(self, ask: Ask) -> None:
        self._ask = ask

    async def _data(self, request: Request, kind: CommandKind, **args: str) -> Reply | Response:
        """The core's reply to ``kind``, or the error page."""
        reply = await self._ask(command(kind, sha_of(request), **args))
        if isinstance(reply, Response) or reply.tone is Tone.ERROR:
            return error_page(request, reply)
        return reply
