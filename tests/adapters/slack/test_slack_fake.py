"""The fake Slack itself: runnable alone, recording calls, answering in Slack's wire format."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.fakes.slack import FakeSlack

ROOT = Path(__file__).resolve().parents[3]


def call(url: str, token: str = "", body: bytes = b"", content_type: str = "application/x-www-form-urlencoded"):
    request = urllib.request.Request(url, data=body or None, headers={"Content-Type": content_type})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.headers.get("Content-Type", ""), response.read()


def test_the_fake_runs_alone_and_records_every_call(tmp_path):
    record = tmp_path / "calls.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.slack", "--port", "0", "--record", str(record)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        api = re.search(r"(http://\S+/api/)", line).group(1)
        status, _, body = call(api + "auth.test", "xoxb-fake-bot-token", b"")
        assert status == 200 and json.loads(body)["user_id"] == "U0KRBOT"
        _, _, body = call(
            api + "chat.postMessage",
            "xoxb-fake-bot-token",
            json.dumps({"channel": "C1", "text": "hi"}).encode(),
            "application/json; charset=utf-8",
        )
        assert json.loads(body)["ok"] is True
    finally:
        proc.terminate()
        proc.wait(10)
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["method"] for r in recorded] == ["auth.test", "chat.postMessage"]
    assert recorded[1]["params"] == {"channel": "C1", "text": "hi"} and recorded[1]["auth"] == "bot"


def test_the_fake_answers_like_slack():
    with FakeSlack() as fake:
        assert json.loads(call(fake.api_url + "auth.test")[2]) == {"ok": False, "error": "not_authed"}
        assert json.loads(call(fake.api_url + "auth.test", "xoxb-wrong")[2])["error"] == "invalid_auth"
        assert json.loads(call(fake.api_url + "nope.nope", fake.bot_token)[2])["error"] == "unknown_method"
        info = fake.add_file("k.py", b"print(1)\n")
        _, kind, body = call(info["url_private_download"], "xoxb-wrong")
        assert kind.startswith("text/html") and b"Sign in" in body  # Slack's login page, not the file
        assert call(info["url_private_download"], fake.bot_token)[2] == b"print(1)\n"
        form = f"file={info['id']}".encode()
        assert json.loads(call(fake.api_url + "files.info", fake.bot_token, form)[2])["file"]["size"] == 9
