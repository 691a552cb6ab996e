"""``harness.host.remote``: the entry every remote runner shares, and how workers read its answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.host.remote import (
    PROTOCOL,
    AnswerError,
    answer,
    decode_payload,
    encode_payload,
    payload_for,
    read_answer,
)
from harness.result import Status
from runners.remote import result_from_answer, wrong_gpu

REPO = Path(__file__).resolve().parents[2]


def test_a_payload_survives_the_trip_through_a_workflow_input(eval_job) -> None:
    payload = payload_for(eval_job())
    encoded = encode_payload(payload)
    assert encoded.isascii() and len(encoded) < len(json.dumps(payload))
    assert decode_payload(encoded) == payload


def test_the_command_line_entry_reads_the_payload_from_the_environment_and_writes_the_answer(
    eval_job, tmp_path: Path
) -> None:
    out = tmp_path / "answer.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "KERNELRANK_PAYLOAD": encode_payload(payload_for(eval_job()))}
    done = subprocess.run(
        [sys.executable, "-m", "harness.host.remote", "--output", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    decoded = read_answer(json.loads(out.read_text()))
    assert decoded.result is not None and decoded.result.status is Status.PASSED
    assert "evaluated on" in done.stdout


def test_an_undecodable_payload_is_an_answer_too(tmp_path: Path) -> None:
    out = tmp_path / "answer.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "KERNELRANK_PAYLOAD": "not base64 at all!"}
    subprocess.run(
        [sys.executable, "-m", "harness.host.remote", "--output", str(out)],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    reply = json.loads(out.read_text())
    assert reply["ok"] is False and "cannot be decoded" in reply["error"]


@pytest.mark.parametrize(
    "data, reason",
    [
        ("text", "not an answer"),
        ({"v": PROTOCOL + 1}, "protocol"),
        ({"v": PROTOCOL, "ok": True, "result": {"schema_version": 99}}, "malformed"),
    ],
)
def test_answers_this_worker_cannot_read_are_refused_with_a_reason(data, reason) -> None:
    with pytest.raises(AnswerError, match=reason):
        read_answer(data)


def test_unreadable_answers_become_results_that_blame_kernelrank(eval_job) -> None:
    result = result_from_answer(eval_job(), "H100", {"v": PROTOCOL + 1}, "Modal")
    assert (
        result.status is Status.ERROR and "Modal sent back something kernelrank cannot read" in result.failure.message
    )


def test_an_error_answer_keeps_its_detail_for_the_log(eval_job) -> None:
    reply = answer({"v": PROTOCOL, "job": {"problem": 42}})
    result = result_from_answer(eval_job(), "H100", reply, "The GitHub runner")
    assert result.status is Status.ERROR and result.failure.message.startswith("The GitHub runner could not evaluate")
    assert "Traceback" in result.failure.log_tail


@pytest.mark.parametrize(
    "pool, seen, ok",
    [
        ("H100", "NVIDIA H100 80GB HBM3", True),
        ("H100", "NVIDIA H200", False),
        ("A100-80GB", "NVIDIA A100-SXM4-80GB", True),
        ("A100-80GB", "NVIDIA A100-SXM4-40GB", False),
        ("B200", "NVIDIA B300 SXM6 AC", False),
        ("H100", "", True),
        ("MI300X", "AMD Instinct MI300X", True),
    ],
)
def test_only_a_gpu_of_the_pools_type_counts(pool: str, seen: str, ok: bool) -> None:
    assert (wrong_gpu(pool, seen) == "") is ok
