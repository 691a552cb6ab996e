"""popcorn-cli against the real API process: its requests as its code builds them, its answers parsed as it parses.

The shapes follow popcorn-cli's ``src/service/mod.rs``: a client whose default header is ``X-Popcorn-Cli-Id`` (the
``cli_id`` of ``~/.popcorn.yaml``, here a kernelrank token), ``GET {url}/leaderboards`` read for ``name``,
``description`` and a ``task`` object, ``GET {url}/gpus/{leaderboard}`` read as a list of names, and a submission as
``POST {url}/{leaderboard lowercased}/{gpu}/{mode lowercased}`` with one multipart part ``file`` (reqwest's
``Part::bytes(..).file_name(..)``: no part content type), whose event stream it cuts at ``"\\n\\n"``.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import httpx
import pytest
from api_kit import SUBMISSIONS, serving_api, start_up, token_of, wait_for_line

from runners.fake import FakeRunner

BOUNDARY = "9a8b7c6d5e4f3a2b-1c0d9e8f7a6b5c4d"  # reqwest draws a random one of this shape


def reqwest_form(file_name: str, content: bytes) -> tuple[dict[str, str], bytes]:
    """A multipart body byte for byte as reqwest writes ``Form::new().part("file", Part::bytes(..))``."""
    body = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n\r\n'.encode()
        + content
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )
    return {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}, body


def popcorn_events(text: str) -> tuple[list[str], str]:
    """popcorn-cli's ``submit_solution`` loop: the status messages it logs and what it returns (the ``reports``),
    or ``AssertionError`` with the message it would fail with."""
    logged: list[str] = []
    buffer = text
    while (pos := buffer.find("\n\n")) >= 0:
        message, buffer = buffer[: pos + 2], buffer[pos + 2 :]
        event = data = None
        for line in message.splitlines():
            if line.startswith("event:"):
                event = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data = line[len("data:") :].strip()
        if event is None or data is None:
            continue
        if event == "status":
            value = json.loads(data)
            logged.append(value.get("message", data) if isinstance(value, dict) else data)
        elif event == "result":
            value = json.loads(data)
            for item in value.get("results", []):
                run = item.get("runs", {}).get(MODE_KEY[0], {}).get("run")
                assert run is not None, "popcorn-cli finds each run under runs[mode]['run']"
                logged.append(run.get("stdout", ""))
            return logged, json.dumps(value["reports"]) if "reports" in value else json.dumps(value)
        elif event == "error":
            raise AssertionError(f"Server processing error: {json.loads(data).get('detail')}")
    raise AssertionError("Stream ended unexpectedly without a final result or error event.")


MODE_KEY = [""]  # popcorn-cli looks a run up by the mode it submitted in, lowercased


@pytest.fixture
async def popcorn(make_system, nats_url):
    system = await make_system(FakeRunner())
    token = await token_of(system, "ada")
    async with (
        serving_api(system.settings, nats_url) as url,
        httpx.AsyncClient(base_url=url, headers={"X-Popcorn-Cli-Id": token}, timeout=60) as http,
    ):
        yield system, http


async def test_lists_leaderboards_and_gpus_as_popcorn_cli_reads_them(popcorn):
    _, http = popcorn
    listed = await http.get("/leaderboards")
    assert listed.status_code == 200
    items = [(lb["name"], lb["description"]) for lb in listed.json() if isinstance(lb["task"], dict)]
    assert [name for name, _ in items] == ["vectoradd"] and all(isinstance(about, str) for _, about in items)
    gpus = await http.get("/gpus/vectoradd")
    assert gpus.status_code == 200 and gpus.json() == ["CPU"]
    register = await http.get("/auth/init", params={"provider": "discord"})  # `popcorn-cli register`
    assert register.status_code == 400 and "~/.popcorn.yaml" in register.json()["detail"]
    missing = await http.get("/gpus/nope")
    assert missing.status_code == 404 and "GET /leaderboards" in missing.json()["detail"]


@pytest.mark.parametrize("mode", ["Test", "Benchmark", "Leaderboard"])
async def test_a_submission_in_each_mode_streams_status_then_its_result(popcorn, mode):
    system, http = popcorn
    MODE_KEY[0] = mode.lower()
    headers, body = reqwest_form("correct.py", (SUBMISSIONS / "correct.py").read_bytes())
    response = await http.post(f"/{'VectorAdd'.lower()}/CPU/{mode.lower()}", headers=headers, content=body)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    logged, reports = popcorn_events(response.text)
    assert any("queued as #1" in line for line in logged), logged
    assert any("passed" in line for line in logged), logged
    assert "passed" in json.loads(reports)[0]
    stored = system.store.submission_detail(1)
    expected = {"Test": "test", "Benchmark": "benchmark", "Leaderboard": "ranked"}[mode]
    assert stored.mode == expected and stored.file_name == "correct.py"  # it landed as any other submission


async def test_refusals_are_a_status_and_a_detail_popcorn_cli_prints(popcorn):
    system, http = popcorn
    headers, body = reqwest_form("correct.py", (SUBMISSIONS / "correct.py").read_bytes())
    unknown = await http.post("/nope/CPU/test", headers=headers, content=body)
    assert unknown.status_code == 404 and "no leaderboard 'nope'" in unknown.json()["detail"]
    no_gpu = await http.post("/vectoradd/H100/test", headers=headers, content=body)
    assert no_gpu.status_code == 400 and "H100" in no_gpu.json()["detail"]
    unsigned = await http.post("/vectoradd/CPU/test", headers={**headers, "X-Popcorn-Cli-Id": ""}, content=body)
    assert unsigned.status_code == 401 and "~/.popcorn.yaml" in unsigned.json()["detail"]
    wrong = await http.post("/vectoradd/CPU/test", headers={**headers, "X-Popcorn-Cli-Id": "kr_x"}, content=body)
    assert wrong.status_code == 401 and "not valid" in wrong.json()["detail"]
    assert system.store.stats().submissions == 0


async def test_queued_submission_and_the_users_own_listing(popcorn):
    system, http = popcorn
    headers, body = reqwest_form("correct.py", (SUBMISSIONS / "correct.py").read_bytes())
    queued = await http.post("/submission/vectoradd/CPU/leaderboard", headers=headers, content=body)
    assert queued.status_code == 202 and queued.json()["details"]["id"] == 1
    listed = await http.get("/user/submissions", params={"leaderboard": "vectoradd"})
    assert listed.status_code == 200 and listed.json()[0]["id"] == 1 and listed.json()[0]["gpu_type"] == "CPU"
    one = await http.get("/user/submissions/1")
    assert one.status_code == 200
    shown = one.json()
    assert shown["leaderboard_name"] == "vectoradd" and "custom_kernel" in shown["code"]
    assert shown["runs"][0]["mode"] == "leaderboard" and shown["runs"][0]["runner"] == "CPU"


@pytest.mark.slow
async def test_the_popcorn_cli_sequence_against_kernelrank_up(tmp_path: Path):
    """What a popcorn-cli user does, in its order, against the whole system ``make up`` starts: list the
    leaderboards and their GPUs, submit in each mode following the stream, then look the results up."""
    up = await start_up(tmp_path)
    log: list[str] = []
    try:
        await wait_for_line(up, "kernelrank is up", log, timeout_s=120)
        run = tmp_path / "var" / "run"
        url, token = (run / "api.url").read_text().strip(), (run / "api.token").read_text().strip()
        async with httpx.AsyncClient(base_url=url, headers={"X-Popcorn-Cli-Id": token}, timeout=60) as http:
            boards = (await http.get("/leaderboards")).json()
            assert [lb["name"] for lb in boards if isinstance(lb["task"], dict)] == ["vectoradd"]
            gpus = (await http.get("/gpus/vectoradd")).json()
            assert gpus == ["CPU"]
            headers, body = reqwest_form("correct.py", (SUBMISSIONS / "correct.py").read_bytes())
            for number, mode in enumerate(["Test", "Benchmark", "Leaderboard"], start=1):
                MODE_KEY[0] = mode.lower()
                streamed = await http.post(f"/vectoradd/{gpus[0]}/{mode.lower()}", headers=headers, content=body)
                assert streamed.status_code == 200, streamed.text
                logged, reports = popcorn_events(streamed.text)
                assert any(f"queued as #{number}" in line for line in logged), logged
                assert "passed" in json.loads(reports)[0]
            queued = await http.post(f"/submission/vectoradd/{gpus[0]}/leaderboard", headers=headers, content=body)
            assert queued.status_code == 202 and queued.json()["details"]["id"] == 4
            listed = (await http.get("/user/submissions", params={"leaderboard": "vectoradd"})).json()
            assert sorted(item["id"] for item in listed) == [1, 2, 3, 4]
            shown = (await http.get("/user/submissions/3")).json()
            assert shown["leaderboard_name"] == "vectoradd" and shown["runs"][0]["mode"] == "leaderboard"
    finally:
        up.send_signal(signal.SIGINT)
        rest, _ = await asyncio.wait_for(up.communicate(), 60)
        log.append(rest.decode())
    assert "kernelrank stopped." in "".join(log)
