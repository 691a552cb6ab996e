"""The entry of remote runners: one job payload in, one plain JSON-able answer out.

Modal functions (``runners/modal_app.py``) call ``answer(payload)``; the GitHub workflow runs
``python -m harness.host.remote --payload-env KERNELRANK_PAYLOAD --output answer.json``. Both evaluate through
the same harness entry as the local runner (``harness.host.server.evaluate``: the submission runs in its own
isolated process), and both give the worker the same answer::

    {"v": 1, "ok": true,  "result": {EvalResult}, "gpu_name": "NVIDIA H100 80GB HBM3", "elapsed_s": 41.2}
    {"v": 1, "ok": false, "error": "what went wrong", "gpu_name": "...", "elapsed_s": 0.3}

``answer`` never raises for anything a job holds: Modal unpickles whatever a function returns or raises
in the worker's process, so only plain data comes back, and an answer always says which GPU the machine
really had (``nvidia-smi``), even when the evaluation could not start.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import shutil
import subprocess
import sys
import time
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.host.server import evaluate
from harness.job import EvalJob
from harness.result import EvalResult

log = logging.getLogger(__name__)

PROTOCOL = 1  # bump when payload or answer change shape; both ends check it
ERROR_TAIL_CHARS = 2000


def payload_for(job: EvalJob) -> dict[str, Any]:
    """What a worker sends to a remote runner for ``job``."""
    return {"v": PROTOCOL, "job": job.to_dict()}


def answer(payload: dict[str, Any], started: float | None = None) -> dict[str, Any]:
    """Evaluate the payload's job; ``started`` (monotonic s) is when the machine began on it, for ``elapsed_s``."""
    started = time.monotonic() if started is None else started
    seen = gpu_name()
    try:
        version = payload.get("v") if isinstance(payload, dict) else None
        if version != PROTOCOL:
            return _failed(
                f"the remote runner speaks protocol {PROTOCOL} but was sent {version!r}; deploy the "
                "runner from the same kernelrank version as the workers",
                seen,
                started,
            )
        result = evaluate(EvalJob.from_dict(payload["job"]))
        return {
            "v": PROTOCOL,
            "ok": True,
            "result": result.to_dict(),
            "gpu_name": seen,
            "elapsed_s": time.monotonic() - started,
        }
    except Exception as exc:
        log.exception("remote evaluation failed")
        detail = "".join(traceback.format_exception(exc))[-ERROR_TAIL_CHARS:]
        return _failed(f"{type(exc).__name__}: {exc}", seen, started, detail)


def _failed(error: str, seen: str, started: float, detail: str = "") -> dict[str, Any]:
    return {
        "v": PROTOCOL,
        "ok": False,
        "error": error,
        "detail": detail,
        "gpu_name": seen,
        "elapsed_s": time.monotonic() - started,
    }


def gpu_name() -> str:
    """The first GPU's name as the driver reports it, or "" on a machine without one."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return ""
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return next((line.strip() for line in out.splitlines() if line.strip()), "")


@dataclass
class Answer:
    """An answer read back by the worker: a result, or the error that stopped the remote side."""

    result: EvalResult | None
    error: str
    detail: str
    gpu_name: str
    elapsed_s: float


class AnswerError(ValueError):
    """What came back is not an answer this build can read."""


def read_answer(data: Any) -> Answer:
    """Check and decode what a remote runner returned; ``AnswerError`` says why it cannot be used."""
    if not isinstance(data, dict):
        raise AnswerError(f"the remote runner returned a {type(data).__name__}, not an answer")
    if data.get("v") != PROTOCOL:
        raise AnswerError(f"the remote runner answered in protocol {data.get('v')!r}; this worker reads {PROTOCOL}")
    try:
        result = EvalResult.from_dict(data["result"]) if data.get("ok") else None
        return Answer(
            result=result,
            error=str(data.get("error", "")),
            detail=str(data.get("detail", "")),
            gpu_name=str(data.get("gpu_name", "")),
            elapsed_s=float(data.get("elapsed_s", 0.0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise AnswerError(f"the remote runner's answer is malformed: {exc}") from exc


def encode_payload(payload: dict[str, Any]) -> str:
    """A payload as one ASCII string (zlib, then base64): fits a workflow input of 64 KiB for typical jobs."""
    return base64.b64encode(zlib.compress(json.dumps(payload).encode(), 9)).decode()


def decode_payload(text: str) -> dict[str, Any]:
    return json.loads(zlib.decompress(base64.b64decode(text)))


def main(argv: list[str] | None = None) -> int:
    """``python -m harness.host.remote``: the GitHub workflow's step; writes the answer as JSON."""
    parser = argparse.ArgumentParser(prog="python -m harness.host.remote", description=main.__doc__)
    parser.add_argument(
        "--payload-env",
        default="KERNELRANK_PAYLOAD",
        help="environment variable holding the encoded payload (never a command-line argument)",
    )
    parser.add_argument("--output", type=Path, required=True, help="where to write the answer (JSON)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    text = os.environ.pop(args.payload_env, "")
    try:
        payload = decode_payload(text)
    except (ValueError, zlib.error) as exc:
        reply = _failed(f"the payload in ${args.payload_env} cannot be decoded ({exc})", gpu_name(), started)
    else:
        reply = answer(payload, started)
    args.output.write_text(json.dumps(reply))
    print(
        f"kernelrank remote runner: {'evaluated' if reply['ok'] else reply['error']} on "
        f"{reply['gpu_name'] or 'a machine without a GPU'} in {reply['elapsed_s']:.1f} s"
    )
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="harness-remote %(levelname)s %(name)s: %(message)s")
    sys.exit(main())
