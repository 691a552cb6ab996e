"""Nsight Compute for profile mode: whether it can run, its command lines, and its CSV read into a summary.

ncu must start the profiled process itself, so profile mode runs ``python -m harness.judge.profile_target`` under
it, one benchmark shape per run (the submission's calls only: ``--profile-from-start off`` and the target's
``cudaProfilerStart``/``Stop`` leave input generation out), with ``--clock-control none`` so kernels run at the
clocks users see. The report file is kept and attached to the result; the numbers come from
``ncu --import REPORT --csv --page raw --print-units base``: a header row of metric names, a row of units,
then one row per kernel launch.
"""

from __future__ import annotations

import csv
import glob
import io
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from harness.result import KernelProfile

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats")
EXTRA_METRICS = ("dram__bytes.sum.per_second",)
PARAMS = Path("/proc/driver/nvidia/params")
TOP_STALLS = 3
# Metric names (ncu 2023 and later) of what the summary shows.
DURATION = "gpu__time_duration.sum"
MEMORY_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
COMPUTE_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_RATE = "dram__bytes.sum.per_second"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL = "sm__maximum_warps_per_active_cycle_pct"
STALL = re.compile(r"^smsp__average_warps?_(?:latency_)?issue_stalled_(\w+?)(?:_per_issue_active)?\.ratio$")
_TIME_UNITS = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}
_RATE_UNITS = {
    "byte/second": 1e-9,
    "Kbyte/second": 1e-6,
    "Mbyte/second": 1e-3,
    "Gbyte/second": 1.0,
    "Tbyte/second": 1e3,
}


def executable() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in (
        "/usr/local/cuda/bin/ncu",
        "/usr/local/cuda/nsight-compute-*/ncu",
        "/opt/nvidia/nsight-compute/*/ncu",
    ):
        if matches := sorted(glob.glob(pattern)):
            return matches[-1]
    return None


def unavailable_reason() -> str | None:
    """Why ncu cannot profile here, as a sentence; None when it should work."""
    if executable() is None:
        return "Nsight Compute (ncu) is not installed on this machine"
    try:
        params = PARAMS.read_text()
    except OSError:
        params = ""
    if re.search(r"RmProfilingAdminOnly:\s*1", params) and os.geteuid() != 0:
        return (
            "the GPU driver lets only administrators read performance counters (RmProfilingAdminOnly=1), and "
            "evaluations never run as one"
        )
    return None


def profile_command(report: str, target: list[str]) -> list[str]:
    command = [
        executable() or "ncu",
        "--target-processes",
        "all",
        "--clock-control",
        "none",
        "--profile-from-start",
        "off",
        "--export",
        report,
        "--force-overwrite",
    ]
    for section in SECTIONS:
        command += ["--section", section]
    return [*command, "--metrics", ",".join(EXTRA_METRICS), *target]


def csv_command(report: str) -> list[str]:
    return [executable() or "ncu", "--import", report, "--csv", "--page", "raw", "--print-units", "base"]


def parse_raw_csv(text: str) -> list[KernelProfile]:
    """Kernels from ncu's raw page in CSV; lines before the header (``==PROF==`` notes, program output) are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, rows = rows[0], rows[1:]
    units = rows.pop(0) if rows and not rows[0][0].strip() else [""] * len(header)
    kernels = []
    for row in rows:
        if len(row) != len(header):
            continue
        cells = dict(zip(header, row, strict=True))
        unit = dict(zip(header, units, strict=False))
        stalls = sorted(
            (
                (match.group(1), value)
                for name, text in cells.items()
                if (match := STALL.match(name)) and (value := _number(text)) is not None and value > 0
            ),
            key=lambda item: -item[1],
        )
        kernels.append(
            KernelProfile(
                name=cells.get("Kernel Name", "?"),
                duration_us=_scaled(cells.get(DURATION), unit.get(DURATION, "nsecond"), _TIME_UNITS),
                memory_pct=_number(cells.get(MEMORY_PCT)),
                compute_pct=_number(cells.get(COMPUTE_PCT)),
                dram_gbps=_scaled(cells.get(DRAM_RATE), unit.get(DRAM_RATE, "byte/second"), _RATE_UNITS),
                occupancy_pct=_number(cells.get(OCCUPANCY)),
                theoretical_occupancy_pct=_number(cells.get(THEORETICAL)),
                grid=cells.get("Grid Size", ""),
                block=cells.get("Block Size", ""),
                stalls=dict(stalls[:TOP_STALLS]),
            )
        )
    return kernels


def summary(kernels: Iterable[KernelProfile]) -> str:
    """A table for the report: one line per kernel launch."""
    header = ["kernel", "time", "memory", "compute", "DRAM", "occupancy", "top stalls"]
    rows = [
        [
            _short(k.name),
            _fmt(k.duration_us, " us"),
            _fmt(k.memory_pct, " %"),
            _fmt(k.compute_pct, " %"),
            _fmt(k.dram_gbps, " GB/s"),
            f"{_fmt(k.occupancy_pct, '')}/{_fmt(k.theoretical_occupancy_pct, '')} %",
            ", ".join(f"{reason} {value:.2g}" for reason, value in k.stalls.items()) or "-",
        ]
        for k in kernels
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


def _number(text: str | None) -> float | None:
    try:
        return float((text or "").replace(",", ""))
    except ValueError:
        return None


def _scaled(text: str | None, unit: str, scales: dict[str, float]) -> float | None:
    value = _number(text)
    return None if value is None or unit not in scales else value * scales[unit]


def _fmt(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.3g}{unit}"


def _short(name: str, width: int = 48) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"
