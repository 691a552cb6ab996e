"""What an operator reaches for, against the real API process, core, NATS and DuckDB: the OpenAPI description,
Prometheus metrics that move when a job runs, the version in the health answer, JSON log lines."""

from __future__ import annotations

import json
import logging
import re

import httpx
from api_kit import SUBMISSIONS, serving_api, token_of
from openapi_spec_validator import validate

from core.contracts.registry import COMMANDS
from core.contracts.version import __version__
from core.launch.jsonlog import JsonFormatter
from runners.fake import FakeRunner


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [node["$ref"]] if "$ref" in node else [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def _figure(text: str, series: str) -> float:
    match = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


async def test_openapi_describes_every_registry_route(make_system, nats_url):
    system = await make_system(FakeRunner())
    async with serving_api(system.settings, nats_url) as url, httpx.AsyncClient(base_url=url) as http:
        doc = (await http.get("/v1/openapi.json")).json()
        health = (await http.get("/v1/health")).json()
        page = await http.get("/v1/docs")
    validate(doc)  # against the OpenAPI 3.1 schema (its JSON Schema dialect included); raises where it breaks it
    assert doc["openapi"].startswith("3.1") and doc["info"]["version"] == __version__ == health["version"]
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    for spec in COMMANDS:
        for route in spec.routes:
            operation = doc["paths"][route.path][route.method.lower()]
            declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert declared == set(route.path_params), route.path
            assert operation["summary"] == spec.about and operation["responses"]
    for ref in _refs(doc):  # every reference resolves inside the document
        node = doc
        for key in ref.removeprefix("#/").split("/"):
            node = node[key]
    submit = doc["paths"]["/v1/submissions"]["post"]["requestBody"]["content"]
    assert submit["multipart/form-data"]["schema"]["properties"]["file"]["format"] == "binary"
    assert page.status_code == 200 and "/v1/leaderboards/{leaderboard}" in page.text


async def test_metrics_move_when_a_job_runs(make_system, nats_url):
    system = await make_system(FakeRunner(), pools=["CPU", "H100"])  # no H100 worker: its run waits
    token = await token_of(system, "ada")
    bearer = {"Authorization": f"Bearer {token}"}
    async with serving_api(system.settings, nats_url) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        public = (await http.get("/metrics")).text
        assert 'kernelrank_up{part="core"} 1' in public and "kernelrank_queue_waiting" not in public
        before = (await http.get("/metrics", headers=bearer)).text
        kernel = (SUBMISSIONS / "correct.py").read_text()
        reply = await system.submit("ada", kernel, leaderboard="vectoradd", gpu="CPU")
        await system.finals({run["run_id"] for run in reply.data["runs"]})
        await system.submit("ada", kernel, leaderboard="vectoradd", gpu="H100")
        after = await http.get("/metrics", headers=bearer)
    assert after.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = after.text
    moved = {
        'kernelrank_runs{status="passed"}': (0, 1),  # runs by outcome
        'kernelrank_runs{status="queued"}': (0, 1),
        "kernelrank_submissions": (0, 2),
        'kernelrank_queue_waiting{pool="H100"}': (0, 1),  # queue depth per pool
        'kernelrank_queue_waiting{pool="CPU"}': (0, 0),
        'kernelrank_core_reply_seconds_count{command="stats"}': (2, 3),  # reply latency: one per scrape
    }
    assert {series: (_figure(before, series), _figure(text, series)) for series in moved} == moved
    assert _figure(text, 'kernelrank_core_reply_seconds_bucket{command="stats",le="+Inf"}') == 3
    assert _figure(text, 'kernelrank_pool_workers{pool="CPU"}') >= 1  # the CPU worker's heartbeats reached the core
    assert _figure(text, 'kernelrank_pool_workers{pool="H100"}') == 0
    for line in text.splitlines():  # the exposition format: comments, or a name, labels and a number
        assert line.startswith("# ") or re.fullmatch(r'[a-z_]+(\{[a-z]+="[^"]*"(,[a-z]+="[^"]*")*\})? \S+', line)


def test_json_log_lines():
    record = logging.LogRecord("core.service", logging.WARNING, __file__, 1, "run %s lost", ("r1",), None)
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "WARNING" and line["logger"] == "core.service" and line["message"] == "run r1 lost"
