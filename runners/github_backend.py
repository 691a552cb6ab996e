"""The github backend: each job is a ``workflow_dispatch`` run on a self-hosted GitHub Actions GPU runner.

``kernelrank worker --gpu H100 --backend github``, per job::

    POST dispatches {run_id, gpu, payload}     the workflow (docs/github/kernelrank-runner.yml) titles the run
                                               with the run id and runs on the runner labelled with the pool
    the workflow run's id -> KV runner_calls   returned by the dispatch, or found by title on older servers
    GET runs/{id} until completed              the worker heartbeats the job meanwhile
    artifact kernelrank-answer-<run id>        answer.json, written by ``python -m harness.host.remote``

A restarted worker re-attaches through the stored record (a dispatch whose run was never seen is found by
its title, and sent again only if GitHub never created it). A run that is not finished by its deadline
(the job's limit plus time allowed to wait for a runner) is cancelled. The token is sent to GitHub only,
never to the artifact storage GitHub redirects downloads to.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from core.contracts.config import Settings
from harness.host.remote import encode_payload, payload_for
from harness.job import EvalJob
from harness.result import EvalResult, FailureKind
from runners import remote
from runners.base import BackendError, ProgressCallback, RunnerUnavailable
from runners.github_api import GitHubAPI, GitHubError, GitHubRefused, GitHubUnavailable
from runners.remote import CallStore, quietly

log = logging.getLogger(__name__)

BACKEND = "github"
POLL_S = 15.0  # 4 requests a minute per run: far inside GitHub's 5,000 an hour
FIND_GRACE_S = 120.0  # a dispatch whose run has not appeared by then is sent again
MAX_INPUT_CHARS = 65_000  # GitHub refuses workflow inputs over 65,535 characters in all
ANSWER_FILE = "answer.json"


def artifact_name(run_id: str) -> str:
    """The answer artifact's name; the workflow uploads ``kernelrank-answer-${{ inputs.run_id }}``."""
    return f"kernelrank-answer-{run_id}"


def github_api(settings: Settings) -> GitHubAPI:
    """The API client from the settings; refuses to build one that cannot work."""
    missing = [
        name
        for name, value in (("GITHUB_TOKEN", settings.github_token), ("KERNELRANK_GITHUB_REPO", settings.github_repo))
        if not value
    ]
    if missing:
        raise BackendError(f"the github backend needs {' and '.join(missing)} (see docs/runners.md)")
    return GitHubAPI(
        settings.github_api_url,
        settings.github_repo,
        settings.github_token,
        settings.github_workflow,
        settings.github_ref,
    )


class GitHubRunner:
    """Implements ``runners.base.Runner`` with workflow runs; self-hosted runners are not billed per run."""

    name = BACKEND
    price_per_s: float | None = None

    def __init__(
        self,
        gpu: str,
        calls: CallStore,
        api: GitHubAPI,
        *,
        queue_timeout_s: float = 1800.0,
        poll_s: float = POLL_S,
        find_grace_s: float = FIND_GRACE_S,
    ) -> None:
        self.gpu, self.calls, self.api = gpu, calls, api
        self.queue_timeout_s = queue_timeout_s
        self.poll_s = poll_s
        self.find_grace_s = find_grace_s

    async def run(self, job: EvalJob, on_progress: ProgressCallback | None = None) -> EvalResult:
        encoded = encode_payload(payload_for(job))
        if len(encoded) > MAX_INPUT_CHARS:
            return remote.failure(
                job,
                FailureKind.HARNESS_ERROR,
                "This job is too large to send to a GitHub runner "
                f"({len(encoded)} characters compressed, GitHub takes {MAX_INPUT_CHARS}); submit "
                "a smaller file, or ask an admin to serve this GPU from Modal or a local worker.",
            )
        record = await quietly(self.calls.get(job.run_id))
        if not (record and record.get("backend") == BACKEND):
            record = {"backend": BACKEND, "started_at": time.time(), "gh_run": None}
        try:
            return await self._follow(job, record, encoded, on_progress)
        except GitHubRefused as exc:
            log.error("run %s: the GitHub runner is not configured: %s", job.run_id, exc)
            return remote.failure(
                job, FailureKind.HARNESS_ERROR, f"The GitHub runner is not configured: {exc}. {remote.NOT_YOUR_FAULT}"
            )

    async def _follow(
        self, job: EvalJob, record: dict[str, Any], encoded: str, on_progress: ProgressCallback | None
    ) -> EvalResult:
        started_at = float(record["started_at"])
        give_up = remote.give_up_at(job, started_at, self.queue_timeout_s)
        if record["gh_run"] is None and not record.get("dispatched"):
            await self._dispatch(job, record, encoded)
        noted: float | None = None
        while time.time() < give_up:
            try:
                if record["gh_run"] is None:
                    await self._find(job, record, encoded)
                else:
                    run = await self.api.run(record["gh_run"])
                    if run.get("status") == "completed":
                        return await self._finish(job, record["gh_run"], run)
                    if on_progress is not None and (noted is None or time.monotonic() - noted >= remote.NOTE_EVERY_S):
                        noted = time.monotonic()
                        running = run.get("status") == "in_progress"
                        where = "on a GitHub runner" if running else "queued for a GitHub runner"
                        await on_progress(remote.waiting(f"{where} ({self.gpu})", started_at))
            except GitHubUnavailable as exc:
                log.warning("run %s: %s; trying again", job.run_id, exc)
            await asyncio.sleep(min(self.poll_s, max(0.0, give_up - time.time())))
        return await self._abandon(job, record, started_at)

    async def _dispatch(self, job: EvalJob, record: dict[str, Any], encoded: str) -> None:
        """Start the workflow run; the record is stored first, so a crash right after it is found by title."""
        record.update(dispatched=time.time())
        await quietly(self.calls.put(job.run_id, record))
        try:
            record["gh_run"] = await self.api.dispatch({"run_id": job.run_id, "gpu": self.gpu, "payload": encoded})
        except GitHubUnavailable as exc:
            await quietly(self.calls.delete(job.run_id))
            raise RunnerUnavailable(f"GitHub is unreachable ({exc})") from exc
        if record["gh_run"] is not None:
            await quietly(self.calls.put(job.run_id, record))
            log.info("run %s: GitHub workflow run %s", job.run_id, record["gh_run"])

    async def _find(self, job: EvalJob, record: dict[str, Any], encoded: str) -> None:
        """Look the run up by its title; dispatch again when GitHub never created it."""
        found = await self.api.find_run(job.run_id, since=float(record["dispatched"]) - 60)
        if found is not None:
            record["gh_run"] = int(found["id"])
            await quietly(self.calls.put(job.run_id, record))
            log.info("run %s: found GitHub workflow run %s", job.run_id, record["gh_run"])
        elif time.time() - float(record["dispatched"]) > self.find_grace_s:
            log.warning("run %s: no workflow run appeared for its dispatch; dispatching again", job.run_id)
            await self._dispatch(job, record, encoded)

    async def _finish(self, job: EvalJob, gh_run: int, run: dict[str, Any]) -> EvalResult:
        conclusion = run.get("conclusion") or "unknown"
        try:
            data = await self.api.artifact_file(gh_run, artifact_name(job.run_id), ANSWER_FILE)
        except GitHubUnavailable:
            raise
        except GitHubError as exc:
            data, conclusion = None, f"{conclusion}; {exc}"
        if data is None:
            await quietly(self.calls.delete(job.run_id))
            kind = FailureKind.TIMEOUT if conclusion == "timed_out" else FailureKind.HARNESS_ERROR
            return remote.failure(
                job,
                kind,
                f"The GitHub runner ended with '{conclusion}' before it could answer "
                f"(workflow run {run.get('html_url') or gh_run}). {remote.NOT_YOUR_FAULT}",
            )
        return remote.result_from_answer(job, self.gpu, _json(data), "The GitHub runner")

    async def _abandon(self, job: EvalJob, record: dict[str, Any], started_at: float) -> EvalResult:
        if record.get("gh_run") is not None:
            try:
                await self.api.cancel(record["gh_run"])
            except GitHubError as exc:
                log.warning("run %s: could not cancel workflow run %s: %s", job.run_id, record["gh_run"], exc)
        await quietly(self.calls.delete(job.run_id))
        waited = (time.time() - started_at) / 60
        return remote.failure(
            job,
            FailureKind.TIMEOUT,
            f"No GitHub {self.gpu} runner finished this run within "
            f"{waited:.0f} minutes (waiting for a free runner included), so it was cancelled. "
            "Submit again later, or pick another GPU.",
        )

    async def backlog(self) -> int:
        """Jobs queued for runners are GitHub's to count; this backend keeps none of its own."""
        return 0

    async def close(self) -> None:
        await self.api.close()


def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None  # result_from_answer reports it as unreadable
