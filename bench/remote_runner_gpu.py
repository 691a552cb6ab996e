"""GPU evidence for the remote runners (issue 10): the entry Modal's functions and the GitHub workflow run.

    python3 bench/remote_runner_gpu.py               # on a CUDA machine, from the repository root (~3 min)
    python3 bench/remote_runner_gpu.py --cpu-dry-run # anywhere: the same cases on the CPU (CUDA ones skipped)

Modal and GitHub cannot be reached from our machines, but what runs on their GPUs can run here:

a) ``harness.host.remote.answer`` (the body of every Modal function) on the identity problem, test and benchmark
   mode, PyTorch and inline CUDA (nvcc + load_inline), with ``device="auto"`` as ``kernelrank modal check``
   sends it: each must pass on the GPU, and the answer must name the GPU that torch sees.
b) the GitHub workflow's step, ``python -m harness.host.remote --payload-env ... --output answer.json``, in a
   child process with an encoded payload: vectoradd's PyTorch solution, ranked, must pass with a score.
c) the Modal function body itself (``runners.modal_app.run_job``, compile-cache copies included), when the
   ``modal`` package is installed here; skipped otherwise.
d) the pool check: the GPU's name (as nvidia-smi gives it) maps to a known pool, and torch names the same type.

Prints a table at the end; with ``$OUT`` set writes ``$OUT/remote_runner_gpu.json`` (every answer, minus
per-sample timings). Exit status: 2 when no CUDA GPU is visible (without --cpu-dry-run), 1 when a case did
not give the expected answer, else 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout, no install needed

from core.contracts.gpus import KNOWN_POOLS, pool_for  # noqa: E402 - plain module, no bus or database
from harness.host.remote import answer, encode_payload, gpu_name, payload_for, read_answer  # noqa: E402
from harness.job import EvalJob  # noqa: E402
from harness.loading import load_problem  # noqa: E402
from harness.result import Mode  # noqa: E402

IDENTITY = REPO / "runners" / "identity"
VECTORADD = REPO / "problems" / "vectoradd"


def identity_job(submission: str, mode: Mode) -> EvalJob:
    return EvalJob(
        problem=load_problem(IDENTITY),
        submission_name=submission,
        submission_source=(IDENTITY / submission).read_text(),
        mode=mode,
        device="auto",
        run_id=f"bench-{uuid.uuid4().hex[:8]}",
    )


def vectoradd_job(device: str) -> EvalJob:
    return EvalJob(
        problem=load_problem(VECTORADD),
        submission_name="pytorch.py",
        submission_source=(VECTORADD / "solutions" / "correct" / "pytorch.py").read_text(),
        mode=Mode.RANKED,
        device=device,
        secret_seed=20261121,
        run_id=f"bench-{uuid.uuid4().hex[:8]}",
    )


def case(name: str, reply: dict[str, Any], wall_s: float, want_device: str) -> dict[str, Any]:
    decoded = read_answer(reply)
    result = decoded.result
    ok = result is not None and result.passed and result.system.device == want_device
    if ok and want_device == "cuda":  # nvidia-smi's name and torch's name are the same GPU type
        ok = bool(decoded.gpu_name) and pool_for(decoded.gpu_name) == pool_for(result.system.gpu_name)
    return {
        "case": name,
        "ok": ok,
        "gpu_seen": decoded.gpu_name,
        "device": result.system.device if result else "-",
        "status": result.status.value if result else f"error: {decoded.error}",
        "score_us": result.score_us if result else None,
        "elapsed_s": round(decoded.elapsed_s, 1),
        "wall_s": round(wall_s, 1),
        "failure": result.failure.message if result and result.failure else "",
        "answer": _slim(reply),
    }


def run_entry(name: str, job: EvalJob, want_device: str) -> dict[str, Any]:
    started = time.monotonic()
    return case(name, answer(payload_for(job)), time.monotonic() - started, want_device)


def run_workflow_step(job: EvalJob, want_device: str, workdir: Path) -> dict[str, Any]:
    out = workdir / f"answer-{job.run_id}.json"
    env = {**os.environ, "KERNELRANK_PAYLOAD": encode_payload(payload_for(job)), "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "harness.host.remote", "--payload-env", "KERNELRANK_PAYLOAD", "--output", str(out)],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=400,
    )
    if not out.exists():
        return {"case": "b) workflow step", "ok": False, "status": f"no answer file: {done.stderr[-400:]}"}
    return case(
        "b) workflow step: vectoradd ranked", json.loads(out.read_text()), time.monotonic() - started, want_device
    )


def run_modal_body(job: EvalJob, want_device: str) -> dict[str, Any]:
    if importlib.util.find_spec("modal") is None:
        return {"case": "c) Modal body run_job", "ok": True, "status": "skipped: modal is not installed here"}
    from runners import modal_app

    started = time.monotonic()
    return case(
        "c) Modal body run_job: identity test",
        modal_app.run_job(payload_for(job)),
        time.monotonic() - started,
        want_device,
    )


def pool_check(seen: str) -> dict[str, Any]:
    """The GPU maps to one of the pools the Modal app offers, so its runs are checked against the right one."""
    pool = pool_for(seen) if seen else ""
    return {
        "case": "d) pool of this GPU",
        "ok": not seen or pool in KNOWN_POOLS,
        "status": f"{seen or 'no GPU'} -> pool {pool or '-'}",
        "gpu_seen": seen,
    }


def _slim(reply: dict[str, Any]) -> dict[str, Any]:
    """The answer without per-sample timings (they make the JSON large and are not what this checks)."""
    slim = json.loads(json.dumps(reply))
    for shape in (slim.get("result") or {}).get("shapes", []):
        shape.pop("samples_us", None)
    return slim


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-dry-run", action="store_true", help="run on the CPU; CUDA-only cases are skipped")
    args = parser.parse_args()
    seen = gpu_name()
    if not seen and not args.cpu_dry_run:
        print("no CUDA GPU visible (nvidia-smi found none); use --cpu-dry-run to try the cases on the CPU")
        return 2
    device = "cpu" if args.cpu_dry_run else "cuda"
    workdir = Path(os.environ.get("OUT") or "/tmp") / "remote-runner-work"
    workdir.mkdir(parents=True, exist_ok=True)
    rows = [
        run_entry("a) entry: identity python test", identity_job("submission.py", Mode.TEST), device),
        run_entry("a) entry: identity python benchmark", identity_job("submission.py", Mode.BENCHMARK), device),
    ]
    if not args.cpu_dry_run:
        rows.append(
            run_entry("a) entry: identity inline CUDA test", identity_job("submission_cuda.py", Mode.TEST), device)
        )
    rows.append(run_workflow_step(vectoradd_job(device), device, workdir))
    rows.append(run_modal_body(identity_job("submission.py", Mode.TEST), device))
    rows.append(pool_check(seen))

    print(f"\nremote runner evidence on {seen or 'the CPU'} (python {sys.version.split()[0]})")
    print(f"{'case':44} {'ok':3} {'device':6} {'elapsed':>8} {'wall':>6}  status / score / GPU seen")
    for row in rows:
        score = f" score {row['score_us']:.2f} us" if row.get("score_us") else ""
        print(
            f"{row['case'][:44]:44} {'yes' if row['ok'] else 'NO':3} {row.get('device', '-'):6} "
            f"{row.get('elapsed_s', 0):>7}s {row.get('wall_s', 0):>5}s  {row['status']}{score} "
            f"[{row.get('gpu_seen') or '-'}] {row.get('failure', '')[:120]}"
        )
    if out := os.environ.get("OUT"):
        Path(out, "remote_runner_gpu.json").write_text(json.dumps(rows, indent=1, default=str))
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
