"""What the sandbox costs per evaluation, and what an exec-per-job sandbox (bubblewrap) would cost instead.

    .venv/bin/python bench/sandbox_bench.py [--jobs 20]

a) One warm harness server per policy (namespaces, then limits only), the same tiny CPU job (vectoradd
   fixture, test mode) run ``--jobs`` times: median and p90 wall seconds per job as the caller sees it.
b) A fresh interpreter that imports torch, as every job would pay if the sandbox exec'd a new process
   (bubblewrap cannot enter a forked process): plain, and under ``bwrap`` where it is installed.
c) The supervisor's view of the job's processes (a /proc scan), as it runs every 50 ms.

Prints one table; figures go to docs/benchmarks.md by hand, with this command.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness import EvalJob, HarnessServer, Mode, load_problem  # noqa: E402
from harness.isolation import processes  # noqa: E402

SUBMISSION = REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py"
IMPORT_TORCH = [sys.executable, "-c", "import torch"]


def _quantiles(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))]


def per_job(policy: str, jobs: int) -> tuple[str, list[float]]:
    job = EvalJob(
        problem=load_problem(REPO / "tests" / "fixtures" / "harness" / "vectoradd"),
        submission_name="submission.py",
        submission_source=SUBMISSION.read_text(),
        mode=Mode.TEST,
        device="cpu",
    )
    walls = []
    with HarnessServer(sandbox_policy=policy) as server:
        server.evaluate(job)  # the first job pays for nothing the others do not
        for _ in range(jobs):
            started = time.perf_counter()
            result = server.evaluate(job)
            walls.append(time.perf_counter() - started)
            assert result.passed, result.failure
        return server.sandbox, walls


def fresh_interpreter(command: list[str], runs: int) -> list[float]:
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        walls.append(time.perf_counter() - started)
    return walls


def bwrap_command() -> list[str] | None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    return [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--unshare-all",
        "--die-with-parent",
        *IMPORT_TORCH,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20, help="jobs per policy (default 20)")
    args = parser.parse_args()
    rows = []
    for policy in ("namespaces", "limits"):
        try:
            described, walls = per_job(policy, args.jobs)
        except Exception as exc:  # a host without namespaces, or a private interpreter under root
            rows.append((f"a) job, {policy}", "-", "-", f"not available: {exc}"))
            continue
        median, p90 = _quantiles(walls)
        rows.append((f"a) job, {policy}", f"{median * 1000:.0f} ms", f"{p90 * 1000:.0f} ms", described[:70]))
    median, p90 = _quantiles(fresh_interpreter(IMPORT_TORCH, 5))
    rows.append(("b) fresh python, import torch", f"{median * 1000:.0f} ms", f"{p90 * 1000:.0f} ms", "per job"))
    if (command := bwrap_command()) is not None:
        try:
            median, p90 = _quantiles(fresh_interpreter(command, 5))
            rows.append(("b) bwrap + import torch", f"{median * 1000:.0f} ms", f"{p90 * 1000:.0f} ms", "per job"))
        except subprocess.CalledProcessError as exc:
            rows.append(("b) bwrap + import torch", "-", "-", f"bwrap failed: {exc.stderr[-80:]!r}"))
    scans = []
    for _ in range(50):
        started = time.perf_counter()
        processes.usage(1)
        scans.append(time.perf_counter() - started)
    median, p90 = _quantiles(scans)
    rows.append(
        (
            "c) /proc scan",
            f"{median * 1000:.1f} ms",
            f"{p90 * 1000:.1f} ms",
            f"{len(processes.snapshot())} processes on the host",
        )
    )
    print(f"{'what':32} {'median':>9} {'p90':>9}  note")
    for what, med, high, note in rows:
        print(f"{what:32} {med:>9} {high:>9}  {note}")


if __name__ == "__main__":
    main()
