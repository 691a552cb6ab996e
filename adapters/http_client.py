"""The terminal client's side of the HTTP API: requests with the personal token, replies back as ``Reply``.

Errors, all ``ApiError`` with a message fit to print: the API is not reachable, the API refused (its one sentence,
its code and status), or it answered something this client cannot read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import SSEError, connect_sse

from core.contracts.messages import DecodeError, Reply, decode
from core.contracts.registry import Route

STREAM_READ_S = 60.0  # the API sends a keep-alive every 15 s while a run is quiet


class ApiError(Exception):
    def __init__(self, message: str, code: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def path(*parts: str) -> str:
    """``/v1/...`` with each part escaped, so a name can never add a path segment or a query."""
    return "/v1/" + "/".join(quote(str(part), safe="") for part in parts)


def _filled(route: Route, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route's path with its parameters from ``args``, and the arguments left to send."""
    values = {name: value for name, value in args.items() if value is not None and name not in route.fixed}
    parts = [
        str(values.pop(part[1:-1], "")) if part.startswith("{") else part
        for part in route.path.removeprefix("/v1/").split("/")
    ]
    return path(*parts), values


class Api:
    def __init__(self, url: str, token: str, timeout_s: float = 10.0) -> None:
        self.url = url
        self._client = httpx.Client(
            base_url=url,
            headers={"Authorization": f"Bearer {token}"} if token else {},  # none: a visitor (health, public reads)
            timeout=httpx.Timeout(timeout_s + 5, connect=5.0),
            follow_redirects=False,
        )

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._client.close()

    def get(self, route: str, **params: Any) -> Reply:
        return self._reply(self._send("GET", route, params={k: v for k, v in params.items() if v is not None}))

    def post(self, route: str, body: dict[str, Any] | None = None) -> Reply:
        return self._reply(self._send("POST", route, json=body or {}))

    def delete(self, route: str, **params: Any) -> Reply:
        return self._reply(self._send("DELETE", route, params={k: v for k, v in params.items() if v is not None}))

    def health(self) -> dict[str, Any]:
        """``/v1/health``'s answer, also when it says the core is down (503)."""
        response = self._send("GET", "/v1/health")
        try:
            return dict(response.json())
        except (ValueError, TypeError):
            raise self._refusal(response) from None

    def call(self, route: Route, args: dict[str, Any]) -> Reply:
        """Ask through one of the registry's routes: its path filled from ``args``, the rest as query parameters
        (or, for a POST, a JSON body). The arguments the route implies itself are not sent."""
        where, values = _filled(route, args)
        if route.method == "POST":
            return self.post(where, values)
        if route.method == "DELETE":
            return self.delete(where, **values)
        return self.get(where, **values)

    def call_following(self, route: Route, args: dict[str, Any]) -> Iterator[Reply]:
        """``call`` through a POST route, then every reply the first answer says is still coming (``admin create``
        waits for its reference's run); a route whose answer is whole answers once."""
        where, values = _filled(route, args)
        return self._following("POST", where, json=values)

    def submit(
        self, route: Route, files: dict[str, tuple[str, bytes]], args: dict[str, Any], *, follow: bool
    ) -> Iterator[Reply]:
        """Upload a submission through its route: ``files`` by field (the kernel), ``args`` as form fields (a list
        as a repeated field). The acceptance, then (when ``follow``) every progress update and report until the
        last run's report."""
        uploads = {field: (name, content, "text/plain") for field, (name, content) in files.items()}
        data = {name: value for name, value in args.items() if value not in (None, "", [])}
        if not follow:
            yield self._reply(self._send(route.method, route.path, files=uploads, data=data))
            return
        yield from self._following(route.method, route.path, files=uploads, data=data)

    def _following(self, method: str, route: str, **options: Any) -> Iterator[Reply]:
        """The replies of a request asked as an event stream, until the API's ``end``; a plain answer once."""
        timeout = httpx.Timeout(STREAM_READ_S, connect=5.0)
        try:
            with connect_sse(
                self._client, method, route, timeout=timeout, headers={"Accept": "text/event-stream"}, **options
            ) as events:
                if not events.response.headers.get("content-type", "").startswith("text/event-stream"):
                    events.response.read()
                    yield self._reply(events.response)
                    return
                for event in events.iter_sse():
                    if event.event == "end":
                        return
                    if event.event == "reply":
                        yield self._decoded(event.data.encode())
        except (httpx.HTTPError, SSEError) as exc:
            raise self._unreachable(exc) from exc
        raise ApiError(
            "The API closed the stream before the last answer; `kernelrank mine LEADERBOARD` shows how a "
            "submission went, `kernelrank list` whether a leaderboard was created."
        )

    def _send(self, method: str, route: str, **options: Any) -> httpx.Response:
        try:
            return self._client.request(method, route, **options)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc

    def _reply(self, response: httpx.Response) -> Reply:
        if response.status_code >= 400:
            raise self._refusal(response)
        return self._decoded(response.content)

    def _decoded(self, payload: bytes) -> Reply:
        try:
            return decode(Reply, payload)
        except DecodeError as exc:
            raise ApiError(
                f"The API at {self.url} answered in a form this client cannot read; is "
                "KERNELRANK_API_URL right, and is the client as new as the server?"
            ) from exc

    def _refusal(self, response: httpx.Response) -> ApiError:
        try:
            problem = response.json()["error"]
            return ApiError(str(problem["message"]), str(problem.get("code", "")), response.status_code)
        except (ValueError, KeyError, TypeError):
            return ApiError(
                f"The API at {self.url} answered HTTP {response.status_code}; is KERNELRANK_API_URL right?",
                status=response.status_code,
            )

    def _unreachable(self, exc: Exception) -> ApiError:
        if isinstance(exc, httpx.ConnectError):
            return ApiError(
                f"kernelrank is not running at {self.url}: start it with `kernelrank up`, or set "
                "KERNELRANK_API_URL to where it runs.",
                "unavailable",
            )
        if isinstance(exc, httpx.TimeoutException):
            return ApiError(f"The API at {self.url} did not answer in time; try again in a minute.", "unavailable")
        return ApiError(
            f"The connection to {self.url} failed ({type(exc).__name__}); try again in a minute.", "unavailable"
        )
