"""Profile mode's ncu run for one shape, from inside the worker (the job's sandbox).

The worker copies the problem's files and the submission into a fresh folder, runs
``harness.judge.profile_target`` under ``ncu`` (``harness.judge.ncu``), reads the report back as CSV and attaches the
report file. Any failure comes back as a sentence, and profile mode falls back to the torch profiler.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.isolation import rootfs
from harness.judge import ncu
from harness.result import ProfileEntry, ReportFile

NCU_TIMEOUT_S = 120.0
MAX_REPORT_BYTES = 8 * 2**20  # larger reports are summarised, not attached


def profile_shape(
    files: dict[str, bytes], settings: dict[str, Any], spec: dict[str, Any], index: int
) -> ProfileEntry | str:
    """ncu's entry for one shape, or why there is none."""
    folder = Path(tempfile.mkdtemp(prefix="kernelrank-profile-"))
    for name, data in files.items():
        (folder / name).write_bytes(data)
    (folder / "profile.json").write_text(json.dumps(settings))
    report = folder / f"shape{index}.ncu-rep"
    env = {**os.environ, "PYTHONPATH": str(rootfs.PACKAGE_ROOT)}
    target = [sys.executable, "-m", "harness.judge.profile_target", str(folder), json.dumps(spec)]
    try:
        run = subprocess.run(
            ncu.profile_command(str(report), target),
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=NCU_TIMEOUT_S,
        )
        if run.returncode != 0 or not report.is_file():
            return f"ncu could not profile the submission ({_why(run.stdout + run.stderr)})"
        table = subprocess.run(ncu.csv_command(str(report)), capture_output=True, text=True, timeout=NCU_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"ncu could not run ({exc})"
    kernels = ncu.parse_raw_csv(table.stdout)
    if not kernels:
        return "ncu profiled no kernel launched by custom_kernel"
    data = report.read_bytes()
    attached = (
        ReportFile(report.name, base64.b64encode(data).decode(), len(data)) if len(data) <= MAX_REPORT_BYTES else None
    )
    note = "" if attached else f"the report ({len(data) // 2**20} MiB) is too large to attach"
    return ProfileEntry(spec=spec, table=ncu.summary(kernels), tool="ncu", note=note, kernels=kernels, report=attached)


def _why(output: str) -> str:
    """The line of ncu's output that says what went wrong (permissions, an unsupported GPU), or its tail."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    marked = [line for line in lines if "ERR_" in line or "==ERROR==" in line or "==WARNING==" in line]
    return (marked or lines or ["no output"])[0][:500]
