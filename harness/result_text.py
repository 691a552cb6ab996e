"""A readable terminal report of one EvalResult: verdict, tests, per-shape timings, failure, system, sandbox.

Plain text, with ANSI colour for the verdict and pass/fail marks when asked for (a TTY).
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence

from harness import popcorn
from harness.failures import describe
from harness.result import EvalResult, ShapeStats, Status

OUTPUT_LINES = 20  # lines of the submission's stdout/stderr shown under the report
_RANKING = {"geom": "geometric mean", "mean": "arithmetic mean", "last": "last shape"}
_COLOURS = {"green": "\033[32m", "red": "\033[31m", "yellow": "\033[33m", "dim": "\033[2m", "bold": "\033[1m"}
_RESET = "\033[0m"
_STATUS_COLOUR = {Status.PASSED: "green", Status.FAILED: "red", Status.ERROR: "red", Status.TIMEOUT: "yellow"}


def render(result: EvalResult, colour: bool | None = None) -> str:
    """The report as text; ``colour`` None means colour when stdout is a terminal."""
    paint = _Paint(sys.stdout.isatty() if colour is None else colour)
    lines = [
        paint("bold", f"{result.problem} · {result.mode.value} · ")
        + paint(_STATUS_COLOUR[result.status], result.status.value.upper())
    ]
    author = result.measured_by == popcorn.MEASURED_BY
    if author:
        lines.append(paint("yellow", textwrap.fill(popcorn.NOTE, width=100)))
    if result.score_us is not None:
        rule = _RANKING.get(result.ranking_by, result.ranking_by)
        figure = "means" if author else "medians"
        lines.append(f"score {format_us(result.score_us)} ({rule} of {len(result.shapes)} shape {figure})")
    if result.tests:
        lines += ["", _tests(result, paint)]
    if result.shapes:
        lines += ["", "Benchmarks", _indent(_shape_table(result.shapes))]
    for entry in result.profiles:
        lines += ["", f"Profile ({entry.tool}): {describe(entry.spec)}", _indent(entry.table.rstrip())]
        if entry.note:
            lines.append(paint("dim", _indent(entry.note)))
        if entry.report is not None:
            size_mib = entry.report.size_bytes / 2**20
            lines.append(
                paint(
                    "dim",
                    _indent(
                        f"full report attached: {entry.report.name} ({size_mib:.1f} MiB; open it in Nsight Compute)"
                    ),
                )
            )
    if result.failure is not None:
        lines += [
            "",
            paint("red", f"Failure ({result.failure.kind.value})"),
            _indent(textwrap.fill(result.failure.message, width=100)),
        ]
        if result.failure.log_tail.strip():
            lines += [paint("dim", _indent(result.failure.log_tail.rstrip()))]
    else:
        for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
            if text.strip():
                lines += ["", f"{name} (last lines)", paint("dim", _indent(_last_lines(text)))]
    if result.findings:
        lines += [
            "",
            "Review notes (static pre-check)",
            *(_indent(f"{'hold' if f.hold else 'note'}: {f.message}") for f in result.findings),
        ]
    lines += ["", paint("dim", _system_line(result))]
    if result.sandbox.description:
        lines.append(paint("dim" if result.sandbox.isolated else "yellow", f"Sandbox: {result.sandbox.description}."))
    return "\n".join(lines)


def format_us(value: float, micro: str = "us") -> str:
    """Microseconds for people: three significant figures in the unit that fits (``micro`` names µs)."""
    if value >= 1e6:
        return f"{value / 1e6:.3g} s"
    if value >= 1e3:
        return f"{value / 1e3:.3g} ms"
    return f"{value:.3g} {micro}"


def _tests(result: EvalResult, paint: _Paint) -> str:
    passed = sum(t.passed for t in result.tests)
    lines = [f"Tests ({passed}/{len(result.tests)} passed)"]
    for test in result.tests:
        mark = paint("green", "ok  ") if test.passed else paint("red", "FAIL")
        note = "" if test.passed else f"  {test.message.splitlines()[0] if test.message else ''}"
        lines.append(f"  {mark} {describe(test.spec)}{note}")
    return "\n".join(lines)


def _shape_table(shapes: Sequence[ShapeStats]) -> str:
    header = ["shape", "median", "CI", "mean", "min", "p10", "p90", "n", "first call"]
    show_graph = any(s.graph_us is not None for s in shapes)
    show_roofline = any(s.achieved_gbps is not None or s.achieved_tflops is not None for s in shapes)
    header += ["graph"] * show_graph + ["achieved"] * show_roofline
    rows = []
    for s in shapes:
        half_width = (s.ci_high_us - s.ci_low_us) / 2 / s.median_us * 100 if s.median_us > 0 else 0.0
        row = [
            describe(s.spec),
            format_us(s.median_us),
            f"±{half_width:.1f}%",
            format_us(s.mean_us),
            format_us(s.min_us),
            format_us(s.p10_us),
            format_us(s.p90_us),
            str(s.n),
            format_us(s.first_call_us),
        ]
        if show_graph:
            row.append(format_us(s.graph_us) if s.graph_us is not None else "-")
        if show_roofline:
            row.append(_achieved(s))
        rows.append(row)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    text = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in [header, *rows]
    ]
    flagged = [f"{describe(s.spec)}: {', '.join(s.flags)}" for s in shapes if s.flags]
    return "\n".join(text + (["flags: " + "; ".join(flagged)] if flagged else []))


def _achieved(s: ShapeStats) -> str:
    parts = []
    if s.achieved_gbps is not None:
        parts.append(f"{s.achieved_gbps:.3g} GB/s")
    if s.achieved_tflops is not None:
        parts.append(f"{s.achieved_tflops:.3g} TFLOP/s")
    if s.peak_fraction is not None:
        parts.append(f"{s.peak_fraction:.0%} of peak")
    return ", ".join(parts) or "-"


def _system_line(result: EvalResult) -> str:
    info = result.system
    machine = info.gpu_name or info.cpu or info.device
    parts = [f"{info.device}: {machine}" if machine != info.device else info.device]
    parts += [
        f"{name} {version}"
        for name, version in (
            ("driver", info.driver),
            ("CUDA", info.cuda),
            ("torch", info.torch),
            ("triton", info.triton),
            ("python", info.python),
        )
        if version
    ]
    if info.sm_clock_mhz:
        parts.append(f"SM {min(info.sm_clock_mhz)}-{max(info.sm_clock_mhz)} MHz")
    if result.compile_s >= 0.05:
        parts.append(f"{result.compile_s:.1f} s compiling")
    parts.append(f"{result.wall_s:.1f} s wall")
    return " · ".join(parts)


def _last_lines(text: str) -> str:
    return "\n".join(text.rstrip().splitlines()[-OUTPUT_LINES:])


def _indent(text: str) -> str:
    return textwrap.indent(text, "  ")


class _Paint:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, name: str, text: str) -> str:
        return f"{_COLOURS[name]}{text}{_RESET}" if self.colour else text
