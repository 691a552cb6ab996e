"""What the API process answers when no route does: an unknown path, a method a path does not take, a body over its
limit, no token, or an unforeseen failure.

A browser asking for a web page gets a page in the site's layout (``refused.html``); a program gets the JSON error
(``answers.error``). The route family decides first: ``/v1/...`` and ``/metrics`` always answer JSON. Any other
path answers a page when the request accepts ``text/html`` (what a browser sends for an address typed or followed),
JSON otherwise: curl, scripts and popcorn-cli, whose client never asks for HTML (its own routes answer JSON
themselves, ``popcorn.py``).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from adapters.api.answers import error
from adapters.api.web_common import refused
from adapters.api.web_submit import WEB_SUBMIT

API_PREFIXES = ("/v1/", "/metrics")
SIGN_IN = (
    "Send your personal token as `Authorization: Bearer <token>`: get one with `/leaderboard token` in "
    "Discord or `/kernelrank token` in Slack, then run `kernelrank login`."
)


class NoCredential(Exception):
    """The request carries no usable bearer token."""


def wants_page(scope: Scope) -> bool:
    """Whether the request is a browser's for a web page: not an API route, and HTML accepted."""
    path = scope["path"]
    if path == "/v1" or path.startswith(API_PREFIXES):
        return False
    accept = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"accept"), "")
    return "text/html" in accept


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's refusals (no such path, a method the path does not take, a body over its limit) in words."""
    assert isinstance(exc, HTTPException)
    path, method = request.url.path, request.method
    if exc.status_code == 413:
        return too_large(request.scope, str(exc.detail))
    if exc.status_code == 404:
        if wants_page(request.scope):
            return refused(request, "Page not found", f"There is no page at {path}; start from the leaderboards.", 404)
        return error("not_found", f"There is no {method} {path} in the API; see docs/security.md for the routes.")
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "GET")
        methods = " or ".join(m for m in allowed.split(", ") if m != "HEAD")  # HEAD goes with GET unsaid
        message = f"{path} takes {methods}, not {method}; send it as {methods}."
        if wants_page(request.scope):
            return refused(request, "Not allowed", message, 405, Allow=allowed)
        return error("method_not_allowed", message, {"Allow": allowed})
    return error("invalid", str(exc.detail))


def too_large(scope: Scope, message: str) -> Response:
    """A body over its limit: the form's page says so to a browser, the JSON error to a program."""
    if scope["path"] == WEB_SUBMIT or wants_page(scope):
        return refused(Request(scope), "Too large", message, 413)
    return error("too_large", message)


async def no_credential(request: Request, exc: Exception) -> Response:
    return error("unauthenticated", SIGN_IN)


async def internal(request: Request, exc: Exception) -> Response:
    """Anything unforeseen: logged with its traceback by Starlette, answered with a sentence, never the details."""
    message = "Something went wrong in kernelrank; try again in a minute."
    if wants_page(request.scope):
        return refused(request, "Something went wrong", message, 500)
    return error("internal", message)
