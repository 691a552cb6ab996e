"""Builds the EvalResult from what the supervisor saw: the worker's records, the child's exit, its logs.

Statistics, the escaped-work and speed-of-light checks and the score are computed here, outside the
submission's process, from the raw samples the worker sent.
"""

from __future__ import annotations

import logging
import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import limits, liveness, roofline, stats
from harness.codec import DecodeError, from_jsonable
from harness.device import Peaks, cpu_speed_limit, peaks_for
from harness.failures import describe, process_ended, status_for
from harness.isolation.staging import Stage
from harness.job import EvalJob
from harness.problem import TaskSpec
from harness.result import (
    EvalResult,
    Failure,
    FailureKind,
    ProfileEntry,
    ShapeStats,
    Status,
    SystemInfo,
    TestResult,
)

log = logging.getLogger(__name__)

LOG_LIMIT_BYTES = 64 * 1024  # captured stdout/stderr kept per stream: the head and the tail
LOG_HEAD_BYTES = 8 * 1024
TAIL_CHARS = 3000  # log tail shown under a failure that has no traceback of its own


@dataclass
class Ending:
    """How the child's run ended, as seen from outside."""

    records: list[dict[str, Any]] = field(default_factory=list)  # the worker's records, progress excluded
    final: bool = False  # the worker's final record arrived
    exit_status: int | None = None  # os.waitpid status; None when the child could not be reaped
    stopped_for: Failure | None = None  # why the supervisor stopped the child, if it did
    last_progress: dict[str, Any] | None = None

    def where(self) -> str:
        """What the child was doing last, for messages: "testing 2 of 4 (size=127, seed=1)"."""
        return liveness.where(self.last_progress)


def build_result(job: EvalJob, ending: Ending, stage: Stage, wall_s: float) -> EvalResult:
    task = job.problem.task
    result = EvalResult(
        status=Status.PASSED,
        mode=job.mode,
        problem=job.problem.name,
        ranking_by=task.ranking_by,
        stdout=read_log(stage.stdout_path),
        stderr=read_log(stage.stderr_path),
        wall_s=wall_s,
    )
    reported = timing = None
    try:
        reported, raw_shapes, baseline_gap_us = _read_records(result, ending.records)
        timing = _add_shapes(result, task, raw_shapes, baseline_gap_us)
    except (DecodeError, KeyError, TypeError, ValueError) as exc:
        log.warning("malformed worker record: %s", exc)
        reported = Failure(
            FailureKind.TAMPERING,
            "The result channel carried a record the harness cannot read, so the evaluation has no verdict.",
        )
    failure = ending.stopped_for or reported or _exit_failure(ending) or timing
    if failure is None and result.shapes:
        result.score_us = stats.score([_ranked_us(task, s) for s in result.shapes], task.ranking_by)
    if failure is not None:
        failure.log_tail = failure.log_tail or _tail(result.stderr or result.stdout)
        result.status, result.failure = status_for(failure.kind), failure
    if result.system.device == "cuda":
        result.gpu_s = wall_s
    return result


def _read_records(
    result: EvalResult, records: list[dict[str, Any]]
) -> tuple[Failure | None, list[dict[str, Any]], float | None]:
    """Fill the result from the worker's records; returns its failure, raw shapes and sync-gap baseline."""
    reported, shapes, baseline = None, [], None
    for record in records:
        kind = record.get("t")
        if kind == "system":
            result.system = from_jsonable(SystemInfo, record["system"])
        elif kind == "test":
            result.tests.append(from_jsonable(TestResult, record["result"]))
        elif kind == "profile":
            result.profiles.append(from_jsonable(ProfileEntry, record["entry"]))
        elif kind == "calibration":
            baseline = float(record["baseline_gap_us"])
        elif kind == "shape":
            shapes.append(record)
        elif kind == "failure":
            reported = from_jsonable(Failure, record["failure"])
        elif kind == "accounting":
            result.compile_s = float(record["compile_s"])
            result.phases_s = {str(name): float(seconds) for name, seconds in dict(record["phases_s"]).items()}
        else:
            raise DecodeError(f"unknown record type {kind!r}")
    return reported, shapes, baseline


def _add_shapes(
    result: EvalResult, task: TaskSpec, raw_shapes: list[dict[str, Any]], baseline_gap_us: float | None
) -> Failure | None:
    """Per-shape statistics and roofline figures; the first timing the harness must reject, if any.

    Escaped work is reported before an impossible time: a side stream shows as both (the small shapes fall
    under the escape margin but read faster than the memory allows), and "escaped" says what to fix.
    """
    peaks = peaks_for(result.system.gpu_name) if result.system.gpu_name else None
    # on the CPU no datasheet: the floor is what the job's cores could move at most, so a forged sub-microsecond
    # time of a shape of megabytes is named (the judge's clock tolerates 600 us it cannot explain)
    floor = peaks or (cpu_speed_limit(limits.job_cpus()) if not result.system.gpu_name else None)
    escaped = implausible = None
    for index, raw in enumerate(raw_shapes, 1):
        shape = stats.shape_stats(
            dict(raw["spec"]),
            [float(s) for s in raw["samples_us"]],
            float(raw["first_call_us"]),
            [float(g) for g in raw["sync_gaps_us"]],
            str(raw["stop_reason"]),
        )
        if raw.get("graph_checked"):
            shape.graph_us = float(raw["graph_us"])
        elif raw.get("graph_checked") is False:  # the replays did not compute the output: no time shown
            shape.flags.append("graph_replay_mismatch")
        _add_diagnostics(shape, raw)
        shape.flags += stats.stability_flags(shape, result.system.max_sm_clock_mhz or None)
        if shape.clock_mhz is not None:
            result.system.sm_clock_mhz.append(round(shape.clock_mhz))
        shape.achieved_gbps, shape.achieved_tflops, shape.peak_fraction = _achieved(task, shape, peaks)
        where = f"benchmark shape {index} ({describe(shape.spec)})"
        if baseline_gap_us is not None and stats.escaped_timing(shape.sync_gap_us, baseline_gap_us, shape.median_us):
            shape.flags.append("escaped_timing")
            escaped = escaped or Failure(
                FailureKind.ESCAPED_TIMING,
                (
                    f"Work escaped the timed stream on {where}: after the call's end event the device stayed busy for "
                    f"{shape.sync_gap_us:.1f} us (an empty call: {baseline_gap_us:.1f} us). Do all work on the current "
                    "stream and finish it before returning; this timing is withheld."
                ),
            )
        if reason := _impossible(task, shape, floor):
            shape.flags.append("below_speed_of_light")
            implausible = implausible or Failure(
                FailureKind.IMPLAUSIBLE_TIME,
                (
                    f"The time measured on {where} is impossible: {reason}. It was rejected; the submission probably "
                    "skips work or hides it from the timer."
                ),
            )
        result.shapes.append(shape)
    return escaped or implausible


def _add_diagnostics(shape: ShapeStats, raw: dict[str, Any]) -> None:
    """Warm-up readings, SM clock, flush and host times, and placement spread of one shape's calls."""
    shape.warmup_us = [float(w) for w in raw.get("warmup_us", [])]
    if clocks := [float(c) for c in raw.get("clocks_mhz", []) if c and math.isfinite(c) and c > 0]:
        shape.clock_mhz, shape.min_clock_mhz = statistics.median(clocks), min(clocks)
    if flushes := [float(f) for f in raw.get("flushes_us", []) if f and math.isfinite(f) and f > 0]:
        shape.flush_us = statistics.median(flushes)
    if hosts := [float(h) for h in raw.get("hosts_us", []) if math.isfinite(h) and h >= 0]:
        shape.host_us = statistics.median(hosts)
    addresses = [int(a) for a in raw.get("addresses", [])]
    if len(addresses) == len(shape.samples_us):
        shape.address_spread = stats.address_spread(shape.samples_us, addresses)


def _ranked_us(task: TaskSpec, shape: ShapeStats) -> float:
    """The number a shape is ranked by: its median, or its graph-replay time where the problem asks for it."""
    return shape.graph_us if task.timing == "graph" and shape.graph_us is not None else shape.median_us


def _achieved(task: TaskSpec, shape: ShapeStats, peaks: Peaks | None) -> tuple[float | None, ...]:
    try:
        return roofline.achieved(task.roofline, shape.spec, shape.median_us, peaks)
    except ValueError as exc:
        log.warning("roofline of the problem cannot be evaluated: %s", exc)
        return None, None, None


def _impossible(task: TaskSpec, shape: ShapeStats, peaks: Peaks | None) -> str | None:
    try:
        return roofline.impossible_time(task.roofline, shape.spec, shape.median_us, peaks)
    except ValueError:
        return roofline.impossible_time(None, shape.spec, shape.median_us, None)


def _exit_failure(ending: Ending) -> Failure | None:
    status, where = ending.exit_status, ending.where()
    if status is None:
        return Failure(FailureKind.CRASH, f"The submission's process could not be stopped after {where}.")
    if ending.final and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return None
    return process_ended(status, f"while {where}")


def read_log(path: Path) -> str:
    """A captured stream, cut to its head and tail when longer than ``LOG_LIMIT_BYTES``."""
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size <= LOG_LIMIT_BYTES:
                data = stream.read()
            else:
                head = stream.read(LOG_HEAD_BYTES)
                stream.seek(size - (LOG_LIMIT_BYTES - LOG_HEAD_BYTES))
                data = head + f"\n[... {size - LOG_LIMIT_BYTES} bytes cut ...]\n".encode() + stream.read()
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


def _tail(text: str) -> str:
    if len(text) <= TAIL_CHARS:
        return text
    cut = text[-TAIL_CHARS:]
    return cut[cut.find("\n") + 1 :] if "\n" in cut else cut
