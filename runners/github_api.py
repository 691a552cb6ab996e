"""The few GitHub REST calls the github backend makes, over aiohttp, with GitHub's auth and rate limits.

=====================================================================  ================================
call                                                                   for
=====================================================================  ================================
``POST /repos/{repo}/actions/workflows/{workflow}/dispatches``          start a run (``return_run_details``
                                                                       gives its id; older servers: 204)
``GET  /repos/{repo}/actions/workflows/{workflow}/runs``                find a run by its title
``GET  /repos/{repo}/actions/runs/{id}``                                follow it
``POST /repos/{repo}/actions/runs/{id}/cancel``                         cancel it (409: already finished)
``GET  /repos/{repo}/actions/runs/{id}/artifacts``                      find the answer artifact
``GET  /repos/{repo}/actions/artifacts/{id}/zip``                       302 to the zip: fetched without our token
=====================================================================  ================================

Errors: ``GitHubRefused`` (401, 403 without a rate limit, 404, 422: the settings or the workflow are wrong)
and ``GitHubUnavailable`` (network, 5xx, a rate limit that lasts longer than ``max_rate_wait_s``). A
rate-limited request waits for ``retry-after`` or ``x-ratelimit-reset`` and tries again.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
import zipfile
from datetime import UTC, datetime
from typing import Any

import aiohttp

log = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
REQUEST_TIMEOUT_S = 30.0
MAX_RATE_WAIT_S = 120.0  # a longer rate-limit wait is reported as GitHubUnavailable instead
MAX_ANSWER_BYTES = 64 << 20  # an answer artifact larger than this (zipped) is not read


class GitHubError(Exception):
    """A GitHub call failed; the message is safe to show (it never holds the token)."""


class GitHubRefused(GitHubError):
    """GitHub refused the request: token, repository, workflow or inputs are wrong."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class GitHubUnavailable(GitHubError):
    """GitHub could not be reached or is rate limiting us for a while: try again later."""


class GitHubAPI:
    """One repository's workflow, reached with a token; ``close()`` releases the HTTP session."""

    def __init__(
        self,
        base_url: str,
        repo: str,
        token: str,
        workflow: str,
        ref: str = "main",
        *,
        max_rate_wait_s: float = MAX_RATE_WAIT_S,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.repo, self.workflow, self.ref = repo, workflow, ref
        self._token = token
        self.max_rate_wait_s = max_rate_wait_s
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"GitHubAPI({self.base_url!r}, {self.repo!r}, workflow={self.workflow!r})"  # never the token

    async def dispatch(self, inputs: dict[str, str]) -> int | None:
        """Start a workflow run; its id when the server says (``return_run_details``), else None."""
        body = {"ref": self.ref, "inputs": inputs, "return_run_details": True}
        data = await self._call("POST", f"/repos/{self.repo}/actions/workflows/{self.workflow}/dispatches", json=body)
        return int(data["workflow_run_id"]) if isinstance(data, dict) and data.get("workflow_run_id") else None

    async def find_run(self, title: str, since: float) -> dict[str, Any] | None:
        """The newest dispatched run titled ``title`` created at or after ``since`` (Unix time)."""
        created = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        data = await self._call(
            "GET",
            f"/repos/{self.repo}/actions/workflows/{self.workflow}/runs",
            params={"event": "workflow_dispatch", "created": f">={created}", "per_page": "100"},
        )
        runs = [run for run in data.get("workflow_runs", []) if run.get("display_title") == title]
        return max(runs, key=lambda run: run.get("id", 0), default=None)

    async def run(self, run_id: int) -> dict[str, Any]:
        return await self._call("GET", f"/repos/{self.repo}/actions/runs/{run_id}")

    async def cancel(self, run_id: int) -> None:
        """Cancel a run; one that already finished is left as it is."""
        try:
            await self._call("POST", f"/repos/{self.repo}/actions/runs/{run_id}/cancel")
        except GitHubRefused as exc:
            if exc.status != 409:  # 409 Conflict: the run has already finished
                raise

    async def artifact_file(self, run_id: int, artifact: str, member: str) -> bytes | None:
        """``member`` of the run's artifact ``artifact``, or None when the run uploaded no such artifact."""
        data = await self._call(
            "GET", f"/repos/{self.repo}/actions/runs/{run_id}/artifacts", params={"name": artifact, "per_page": "100"}
        )
        found = [a for a in data.get("artifacts", []) if a.get("name") == artifact and not a.get("expired")]
        if not found:
            return None
        archive = await self._download(f"/repos/{self.repo}/actions/artifacts/{found[0]['id']}/zip")
        try:
            with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
                return zipped.read(member)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise GitHubError(f"artifact {artifact} of run {run_id} holds no readable {member} ({exc})") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ----- HTTP ---------------------------------------------------------------------------------

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
                headers={
                    "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": API_VERSION,
                    "User-Agent": "kernelrank-runner",
                },
            )
        return self._session

    async def _call(self, method: str, path: str, **options: Any) -> Any:
        """Send a request with the token and return its JSON (None for an empty body)."""
        async with self._request(method, path, allow_redirects=True, **options) as response:
            body = await response.read()
        return json.loads(body) if body.strip() else None

    async def _download(self, path: str) -> bytes:
        """Follow GitHub's redirect to the archive without our token: the storage host must not see it."""
        async with self._request("GET", path, allow_redirects=False) as response:
            location = response.headers.get("Location", "")
        if not location:
            raise GitHubError(f"GitHub gave no download location for {path}")
        try:
            async with self._http().get(location) as archive:
                if archive.status != 200:
                    raise GitHubUnavailable(f"downloading an artifact failed with HTTP {archive.status}")
                if (archive.content_length or 0) > MAX_ANSWER_BYTES:
                    raise GitHubError("the answer artifact is too large to read")
                return await archive.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise GitHubUnavailable(f"cannot download an artifact ({type(exc).__name__})") from exc

    def _request(self, method: str, path: str, **options: Any) -> _Request:
        return _Request(self, method, path, options)


class _Request:
    """One API request as an async context manager, retried while GitHub rate-limits it."""

    def __init__(self, api: GitHubAPI, method: str, path: str, options: dict[str, Any]) -> None:
        self.api, self.method, self.path, self.options = api, method, path, options
        self.response: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> aiohttp.ClientResponse:
        api = self.api
        headers = {"Authorization": f"Bearer {api._token}"}
        waited = 0.0
        while True:
            try:
                response = await api._http().request(
                    self.method, api.base_url + self.path, headers=headers, **self.options
                )
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise GitHubUnavailable(f"cannot reach GitHub at {api.base_url} ({type(exc).__name__})") from exc
            wait = _rate_limit_wait(response)
            if wait is None:
                break
            response.release()
            if waited + wait > api.max_rate_wait_s:
                raise GitHubUnavailable(f"GitHub is rate limiting this token for {wait:.0f} s more")
            log.warning("GitHub rate limit on %s %s: waiting %.0f s", self.method, self.path, wait)
            await asyncio.sleep(wait)
            waited += wait
        if response.status >= 500:
            response.release()
            raise GitHubUnavailable(f"GitHub answered HTTP {response.status} to {self.method} {self.path}")
        if response.status >= 400:
            detail = await _message(response)
            response.release()
            raise GitHubRefused(
                f"GitHub refused {self.method} {self.path}: HTTP {response.status} {detail}".strip(), response.status
            )
        self.response = response
        return response

    async def __aexit__(self, *exc_info: object) -> None:
        if self.response is not None:
            self.response.release()


def _rate_limit_wait(response: aiohttp.ClientResponse) -> float | None:
    """Seconds to wait before retrying a rate-limited response, or None when it is not rate limited."""
    if response.status not in (403, 429):
        return None
    if retry_after := response.headers.get("retry-after"):
        return max(1.0, float(retry_after))
    if response.headers.get("x-ratelimit-remaining") == "0":
        reset = float(response.headers.get("x-ratelimit-reset", "0"))
        return max(1.0, reset - time.time())
    return 60.0 if response.status == 429 else None  # GitHub: wait at least a minute when it says nothing


async def _message(response: aiohttp.ClientResponse) -> str:
    try:
        data = await response.json(content_type=None)
    except (ValueError, aiohttp.ClientError):
        return ""
    return f"({data.get('message', '')})" if isinstance(data, dict) and data.get("message") else ""
