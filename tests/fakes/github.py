"""A loopback GitHub: the REST endpoints the github backend uses, and a self-hosted runner that runs our workflow.

GitHub is out of reach from here. This server answers like the REST API (paths, status codes, JSON shapes,
``Bearer`` auth, rate-limit headers, the 302 from an artifact to its storage URL, which refuses requests that
carry a token), and validates dispatches against the real workflow file (``docs/github/kernelrank-runner.yml``):
its declared inputs, and the 65,535-character limit. Its "runner" executes that workflow's evaluate step
(the same shell command, with the workflow's environment) and uploads ``answer.json`` as the artifact the
workflow names. Switches: ``runners_online``, ``step_fails``, ``old_server`` (dispatch answers 204 without
the run id), ``lose_dispatches`` (accepted, but no run created), ``rate_limited`` (requests answered 403 with
``x-ratelimit-remaining: 0``), and ``gate`` (holds the runner before the step).
"""

from __future__ import annotations

import asyncio
import io
import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

REPO = Path(__file__).resolve().parents[2]
WORKFLOW_FILE = REPO / "docs" / "github" / "kernelrank-runner.yml"
_EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def load_workflow() -> dict[str, Any]:
    workflow = yaml.safe_load(WORKFLOW_FILE.read_text())
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads the key `on` as True
    return workflow


class FakeGitHub:
    def __init__(
        self,
        repo: str = "team/kernel-runners",
        workflow: str = "kernelrank-runner.yml",
        token: str = "github_pat_fake_0123456789",
        ref: str = "main",
    ) -> None:
        self.repo, self.workflow_file, self.token, self.ref = repo, workflow, token, ref
        self.workflow = load_workflow()
        self.runs: dict[int, dict[str, Any]] = {}
        self.artifacts: dict[int, tuple[int, str, bytes]] = {}  # id -> (run id, name, zip bytes)
        self.dispatches: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.runners_online = True
        self.step_fails = False
        self.old_server = False
        self.lose_dispatches = 0
        self.rate_limited = 0
        self.gate = asyncio.Event()
        self.gate.set()
        self._ids = itertools.count(9_000_000_001)
        self._tasks: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> str:
        app = web.Application(middlewares=[self._checks])
        prefix = f"/repos/{self.repo}/actions"
        app.add_routes(
            [
                web.post(f"{prefix}/workflows/{{workflow}}/dispatches", self._dispatch),
                web.get(f"{prefix}/workflows/{{workflow}}/runs", self._list_runs),
                web.get(f"{prefix}/runs/{{run_id:\\d+}}", self._get_run),
                web.post(f"{prefix}/runs/{{run_id:\\d+}}/cancel", self._cancel),
                web.get(f"{prefix}/runs/{{run_id:\\d+}}/artifacts", self._list_artifacts),
                web.get(f"{prefix}/artifacts/{{artifact_id:\\d+}}/zip", self._download),
                web.get("/storage/{artifact_id:\\d+}", self._storage),
            ]
        )
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def close(self) -> None:
        self.gate.set()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()

    # ----- the API ------------------------------------------------------------------------------

    @web.middleware
    async def _checks(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append((request.method, request.path, dict(request.headers)))
        if request.path.startswith("/storage/"):
            return await handler(request)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"message": "Bad credentials", "status": "401"}, status=401)
        if (
            request.headers.get("X-GitHub-Api-Version") != "2022-11-28"
            or request.headers.get("Accept") != "application/vnd.github+json"
        ):
            return web.json_response({"message": "Send the REST API's Accept and version headers"}, status=400)
        if self.rate_limited:
            self.rate_limited -= 1
            return web.json_response(
                {"message": "API rate limit exceeded for user ID 1."},
                status=403,
                headers={
                    "x-ratelimit-limit": "5000",
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-used": "5000",
                    "x-ratelimit-reset": str(int(time.time()) + 1),
                },
            )
        if "workflow" in request.match_info and request.match_info["workflow"] != self.workflow_file:
            return web.json_response({"message": "Not Found", "status": "404"}, status=404)
        return await handler(request)

    async def _dispatch(self, request: web.Request) -> web.Response:
        body = await request.json()
        declared = self.workflow["on"]["workflow_dispatch"]["inputs"]
        inputs = body.get("inputs", {})
        if body.get("ref") != self.ref:
            return web.json_response({"message": f"No ref found for: {body.get('ref')}"}, status=422)
        if unexpected := sorted(set(inputs) - set(declared)):
            return web.json_response({"message": f"Unexpected inputs provided: {unexpected}"}, status=422)
        if missing := sorted(name for name, spec in declared.items() if spec.get("required") and name not in inputs):
            return web.json_response({"message": f"Required input '{missing[0]}' not provided"}, status=422)
        if sum(len(str(v)) for v in inputs.values()) > 65_535:
            return web.json_response({"message": "inputs are too large"}, status=422)
        self.dispatches.append(body)
        if self.lose_dispatches:
            self.lose_dispatches -= 1
            return web.Response(status=204)
        run = self._new_run(inputs)
        if self.old_server or not body.get("return_run_details"):
            return web.Response(status=204)
        return web.json_response({"workflow_run_id": run["id"], "run_url": run["url"], "html_url": run["html_url"]})

    async def _list_runs(self, request: web.Request) -> web.Response:
        since = request.query.get("created", ">=1970-01-01T00:00:00Z").removeprefix(">=")
        runs = [
            run
            for run in self.runs.values()
            if run["event"] == request.query.get("event", run["event"]) and run["created_at"] >= since
        ]
        return web.json_response({"total_count": len(runs), "workflow_runs": sorted(runs, key=lambda r: -r["id"])})

    async def _get_run(self, request: web.Request) -> web.Response:
        run = self.runs.get(int(request.match_info["run_id"]))
        return web.json_response(run) if run else web.json_response({"message": "Not Found"}, status=404)

    async def _cancel(self, request: web.Request) -> web.Response:
        run = self.runs.get(int(request.match_info["run_id"]))
        if run is None:
            return web.json_response({"message": "Not Found"}, status=404)
        if run["status"] == "completed":
            return web.json_response({"message": "Cannot cancel a workflow run that is completed."}, status=409)
        run.update(status="completed", conclusion="cancelled")
        return web.json_response({}, status=202)

    async def _list_artifacts(self, request: web.Request) -> web.Response:
        run_id = int(request.match_info["run_id"])
        found = [
            {
                "id": artifact_id,
                "name": name,
                "size_in_bytes": len(data),
                "expired": False,
                "archive_download_url": f"{self.base_url}/repos/{self.repo}/actions/artifacts/{artifact_id}/zip",
            }
            for artifact_id, (owner, name, data) in self.artifacts.items()
            if owner == run_id and request.query.get("name", name) == name
        ]
        return web.json_response({"total_count": len(found), "artifacts": found})

    async def _download(self, request: web.Request) -> web.Response:
        artifact_id = int(request.match_info["artifact_id"])
        if artifact_id not in self.artifacts:
            return web.json_response({"message": "Not Found"}, status=404)
        raise web.HTTPFound(f"{self.base_url}/storage/{artifact_id}?sv=2021-08-06&sig=signed")

    async def _storage(self, request: web.Request) -> web.Response:
        if "Authorization" in request.headers:  # the storage service refuses a second credential
            return web.Response(status=400, text="AuthenticationFailed: Authorization header not allowed")
        return web.Response(
            body=self.artifacts[int(request.match_info["artifact_id"])][2], content_type="application/zip"
        )

    # ----- the runner ---------------------------------------------------------------------------

    def _new_run(self, inputs: dict[str, str]) -> dict[str, Any]:
        run_id = next(self._ids)
        run = {
            "id": run_id,
            "name": self.workflow["name"],
            "event": "workflow_dispatch",
            "status": "queued",
            "conclusion": None,
            "display_title": self._expand(self.workflow["run-name"], inputs),
            "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "url": f"{self.base_url}/repos/{self.repo}/actions/runs/{run_id}",
            "html_url": f"https://github.example/{self.repo}/actions/runs/{run_id}",
        }
        self.runs[run_id] = run
        task = asyncio.create_task(self._execute(run, inputs))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run

    async def _execute(self, run: dict[str, Any], inputs: dict[str, str]) -> None:
        """A self-hosted runner picking the job up and running the workflow's steps."""
        while not self.runners_online:
            await asyncio.sleep(0.05)
        await self.gate.wait()
        if run["status"] != "queued":
            return  # cancelled while queued
        run.update(status="in_progress", run_started_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        steps = self.workflow["jobs"]["evaluate"]["steps"]
        evaluate = next(step for step in steps if "run" in step)
        upload = next(step for step in steps if str(step.get("uses", "")).startswith("actions/upload-artifact"))
        with tempfile.TemporaryDirectory() as workspace:
            env = {**os.environ, "PYTHONPATH": str(REPO)}  # the checked-out repository
            env.update({name: self._expand(str(value), inputs) for name, value in evaluate.get("env", {}).items()})
            command = "exit 3" if self.step_fails else evaluate["run"]
            done = await asyncio.to_thread(
                subprocess.run,
                ["bash", "-c", command],
                cwd=workspace,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            answer = Path(workspace) / upload["with"]["path"]
            if answer.exists():
                archive = io.BytesIO()
                with zipfile.ZipFile(archive, "w") as zipped:
                    zipped.write(answer, answer.name)
                name = self._expand(upload["with"]["name"], inputs)
                self.artifacts[next(self._ids)] = (run["id"], name, archive.getvalue())
        if run["status"] == "in_progress":
            run.update(status="completed", conclusion="success" if done.returncode == 0 else "failure")

    @staticmethod
    def _expand(text: str, inputs: dict[str, str]) -> str:
        """The workflow expressions our file uses: ``inputs.X``, and ``vars.X || 'default'`` (this Python)."""

        def value(match: re.Match[str]) -> str:
            expression = match.group(1)
            if expression.startswith("inputs."):
                return inputs[expression.removeprefix("inputs.")]
            if expression.startswith("vars.KERNELRANK_PYTHON"):
                return sys.executable
            raise AssertionError(f"the fake runner does not know the expression {expression!r}")

        return _EXPRESSION.sub(value, text)
