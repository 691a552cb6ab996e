"""The public harness's wire format, both ways: spec files in, ``key: value`` lines out (``POPCORN_FD``).

A problem's own evaluator (``harness.host.author_eval``) is called as GPU MODE's runner calls it:
``python eval.py MODE SPEC_FILE``, the spec file holding one ``key: value; key: value`` line per test or
benchmark. It writes ``key: value`` lines to the descriptor named by ``POPCORN_FD``: ``check: pass|fail``,
``test-count``, ``test.i.spec|status|error``, ``benchmark-count``, ``benchmark.i.spec|status|error`` and
``benchmark.i.{mean,std,err,best,worst,runs}`` (times in nanoseconds), ``error`` for a failure of its own.
This module turns those lines into kernelrank's result parts; it runs in the supervisor, never in the job.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import math
from dataclasses import dataclass, field
from typing import Any

from harness.problem import spec_value
from harness.result import ProfileEntry, ShapeStats, TestResult

PROFILE_CHARS = 200_000  # a profile's text kept in the result
MAX_LINE_CHARS = 1 << 20
MAX_LINES = 100_000  # an evaluator (or the submission inside it) that writes more is flooding
MEASURED_BY = "author_evaluator"  # EvalResult.measured_by of a run the problem's own evaluator judged
NOTE = (
    "Measured and judged by the problem's own evaluator (its config.main), not by kernelrank: its timing method "
    "ran in the submission's process, and kernelrank's timer, checks and defences did not apply."
)
_NS_PER_US = 1000.0


def spec_lines(specs: list[dict[str, Any]]) -> str:
    """The spec file: one ``k: v; k: v`` line per spec, in order."""
    return "".join("; ".join(f"{k}: {v}" for k, v in spec.items()) + "\n" for spec in specs)


@dataclass
class Report:
    """What an evaluator wrote, key by key (a later line with the same key wins, as in the public runner)."""

    values: dict[str, str] = field(default_factory=dict)
    lines: int = 0
    partial: str = ""  # an unfinished last line

    def feed(self, data: str) -> None:
        text = self.partial + data
        *complete, self.partial = text.split("\n")
        if len(self.partial) > MAX_LINE_CHARS:  # one endless line is a flood too
            self.partial, self.lines = "", MAX_LINES + 1
        for line in complete:
            self.lines += 1
            key, sep, value = line.partition(":")
            if sep and key.strip():
                self.values[key.strip()] = value.strip()

    @property
    def flooded(self) -> bool:
        return self.lines > MAX_LINES

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def count(self, kind: str) -> int:
        """How many tests or benchmarks it reported: its ``*-count`` line, else the highest index seen."""
        declared = _integer(self.values.get(f"{kind}-count") or self.values.get(f"{kind}.count"))
        return max(declared or 0, self.seen(kind))

    def seen(self, kind: str) -> int:
        """One past the highest index of ``kind`` ("test" or "benchmark") it has written so far."""
        indices = [_integer(key.split(".")[1]) for key in self.values if key.startswith(f"{kind}.")]
        return max((i for i in indices if i is not None), default=-1) + 1

    def spec(self, kind: str, index: int, fallback: dict[str, Any]) -> dict[str, Any]:
        text = self.values.get(f"{kind}.{index}.spec")
        if not text:
            return fallback
        parsed = {}
        for part in filter(None, (p.strip() for p in text.split(";"))):
            key, _, value = part.partition(":")
            parsed[key.strip()] = spec_value(value.strip())
        return parsed


def verdicts(report: Report, specs: list[dict[str, Any]]) -> list[TestResult]:
    """Per-test verdicts; a test it announced but never judged fails, saying so."""
    results = []
    for i in range(report.count("test")):
        status = report.get(f"test.{i}.status")
        message = report.get(f"test.{i}.error") or ""
        if status is None:
            message = message or "the problem's evaluator reported no verdict for this test"
        results.append(
            TestResult(
                spec=specs[i] if i < len(specs) else report.spec("test", i, {}),
                passed=status == "pass",
                message=message,
            )
        )
    return results


def timings(report: Report, specs: list[dict[str, Any]]) -> tuple[list[ShapeStats], list[str]]:
    """Per-benchmark statistics (µs) from its ns figures, and the reasons of the benchmarks it failed."""
    stats, failed = [], []
    for i in range(report.count("benchmark")):
        # ours where we have it: a ranked run's evaluator may write its secretly seeded spec
        spec = specs[i] if i < len(specs) else report.spec("benchmark", i, {})
        if report.get(f"benchmark.{i}.status") == "fail" or report.get(f"benchmark.{i}.error"):
            failed.append(report.get(f"benchmark.{i}.error") or f"benchmark {i + 1} failed")
            continue
        mean = _us(report.get(f"benchmark.{i}.mean"))
        if mean is None:
            failed.append(f"benchmark {i + 1} reported no mean time")
            continue
        std = _us(report.get(f"benchmark.{i}.std")) or 0.0
        err = _us(report.get(f"benchmark.{i}.err")) or 0.0
        best = _us(report.get(f"benchmark.{i}.best")) or mean
        worst = _us(report.get(f"benchmark.{i}.worst")) or mean
        runs = _integer(report.get(f"benchmark.{i}.runs")) or 0
        # The evaluator gives a mean and its standard error, no samples: the ranked figure is its mean.
        stats.append(
            ShapeStats(
                spec=spec,
                n=runs,
                median_us=mean,
                mean_us=mean,
                trimmed_mean_us=mean,
                std_us=std,
                ci_low_us=mean - 1.96 * err,
                ci_high_us=mean + 1.96 * err,
                min_us=best,
                p10_us=best,
                p90_us=worst,
                max_us=worst,
                first_call_us=0.0,
                stop_reason=MEASURED_BY,
            )
        )
    return stats, failed


def profiles(report: Report, specs: list[dict[str, Any]]) -> list[ProfileEntry]:
    """A profile run's ``benchmark.i.report`` texts (base64 in the public format; shown as text either way)."""
    entries = []
    for i in range(report.count("benchmark")):
        text = report.get(f"benchmark.{i}.report")
        if text is None:
            continue
        with contextlib.suppress(binascii.Error, ValueError):
            text = base64.b64decode(text, validate=True).decode(errors="replace")
        entries.append(
            ProfileEntry(
                spec=specs[i] if i < len(specs) else report.spec("benchmark", i, {}),
                table=text[:PROFILE_CHARS],
                tool=MEASURED_BY,
            )
        )
    return entries


def _us(text: str | None) -> float | None:
    try:
        value = float(text) / _NS_PER_US if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _integer(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
