"""The evaluation result: one versioned, JSON-serialisable structure shared by every runner.

Times are microseconds (``*_us``), sizes bytes, rates named for their unit. A result is built by the
harness supervisor (never inside the submission's process) and travels unchanged through runners, NATS
and storage. Bump ``SCHEMA_VERSION`` on any incompatible change; readers reject versions they do not know.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from harness.codec import DecodeError, from_jsonable, to_jsonable

SCHEMA_VERSION = 1
# The timing procedure's version (docs/timing.md). Scores from different versions are never compared.
METHOD_VERSION = "2026.11-2"  # -2: stop targets per shape, wall budget, unchecked warm-up, host timing


class Status(enum.StrEnum):
    PASSED = "passed"  # every check passed (and, when timed, a score was produced)
    FAILED = "failed"  # the submission ran but was wrong, or its timing was rejected
    ERROR = "error"  # the submission could not run (syntax, import, crash, compile, ...)
    TIMEOUT = "timeout"  # the wall-clock limit of the mode was reached


class Mode(enum.StrEnum):
    TEST = "test"
    BENCHMARK = "benchmark"
    RANKED = "ranked"
    PROFILE = "profile"


class FailureKind(enum.StrEnum):
    """Why an evaluation did not pass; each maps to one clear paragraph for the user."""

    SYNTAX_ERROR = "syntax_error"
    MISSING_ENTRY_POINT = "missing_entry_point"
    IMPORT_ERROR = "import_error"
    COMPILE_ERROR = "compile_error"
    EXCEPTION = "exception"
    WRONG_OUTPUT = "wrong_output"  # checker rejected the output
    BAD_OUTPUT_TYPE = "bad_output_type"  # not a plain tensor / wrong shape, dtype, device
    CRASH = "crash"  # segfault, abort, os._exit, killed by a signal
    CUDA_ERROR = "cuda_error"  # illegal memory access, launch failure, ...
    OUT_OF_MEMORY = "out_of_memory"
    TIMEOUT = "timeout"
    OUTPUT_FLOOD = "output_flood"
    ESCAPED_TIMING = "escaped_timing"  # work ran outside the timed stream
    IMPLAUSIBLE_TIME = "implausible_time"  # below the speed-of-light floor, or not finite
    TAMPERING = "tampering"  # timer/checker patched, harness state touched
    UNTRUSTED_TIME = "untrusted_time"  # a reported time the judge's own clock cannot contain
    HELD_FOR_REVIEW = "held_for_review"  # a ranked run the static pre-check flagged (harness/host/precheck.py)
    RESOURCE_LIMIT = "resource_limit"  # too many processes or threads, files too large, CPU time
    UNSUPPORTED_DEVICE = "unsupported_device"
    UNSUPPORTED = "unsupported"  # a feature this build does not have yet (e.g. .cu submissions)
    INVALID_PROBLEM = "invalid_problem"
    HARNESS_ERROR = "harness_error"  # our fault, never the submission's


@dataclass
class Failure:
    kind: FailureKind
    message: str  # one clear paragraph, safe to show to the user
    log_tail: str = ""  # the relevant tail of the submission's output or traceback


@dataclass
class TestResult:
    spec: dict[str, Any]
    passed: bool
    message: str = ""


@dataclass
class ShapeStats:
    """Per-shape timing of the submission, plus what the timing loop saw."""

    spec: dict[str, Any]
    n: int
    median_us: float
    mean_us: float
    trimmed_mean_us: float  # 10 % trimmed mean
    std_us: float
    ci_low_us: float  # 95 % distribution-free CI of the median
    ci_high_us: float
    min_us: float
    p10_us: float
    p90_us: float
    max_us: float
    first_call_us: float  # first call of the shape, not scored
    sync_gap_us: float = 0.0  # median (post-sync - end event); 0 on CPU
    stop_reason: str = ""  # "converged" | "budget" | "cap"
    achieved_gbps: float | None = None
    achieved_tflops: float | None = None
    peak_fraction: float | None = None  # achieved / peak of the bound resource, 0..1
    graph_us: float | None = None  # CUDA-graph replay time per call, tiny shapes only (graph_timing.py)
    flags: list[str] = field(default_factory=list)
    samples_us: list[float] = field(default_factory=list)
    # diagnostics of the timed calls, for finding the cause of run-to-run differences (docs/timing.md)
    warmup_us: list[float] = field(default_factory=list)  # the warm-up calls' times, in order
    clock_mhz: float | None = None  # median SM clock over the timed calls (CUDA: from the launch-hiding spin)
    min_clock_mhz: float | None = None  # lowest per-call SM clock reading
    flush_us: float | None = None  # median time of the L2 flush before each call: a memory-speed probe
    host_us: float | None = None  # median host time inside the call: near median_us when it waits on the device
    address_spread: float | None = None  # max/min - 1 of the medians per output address (placement effects)


@dataclass
class KernelProfile:
    """One kernel launch as Nsight Compute measured it (harness/judge/ncu.py)."""

    name: str
    duration_us: float | None = None
    memory_pct: float | None = None  # memory throughput, % of the busiest memory unit's peak
    compute_pct: float | None = None  # SM throughput, % of peak
    dram_gbps: float | None = None
    occupancy_pct: float | None = None  # achieved
    theoretical_occupancy_pct: float | None = None
    grid: str = ""
    block: str = ""
    stalls: dict[str, float] = field(default_factory=dict)  # top stall reasons: cycles per issued instruction


@dataclass
class ReportFile:
    """A file attached to the result (the ncu report), base64-encoded."""

    name: str
    data_b64: str
    size_bytes: int


@dataclass
class ProfileEntry:
    spec: dict[str, Any]
    table: str  # the profiler's summary table, as text
    tool: str = "torch.profiler"  # "ncu" or "torch.profiler"
    note: str = ""  # why ncu was not used, when it was not
    kernels: list[KernelProfile] = field(default_factory=list)
    report: ReportFile | None = None


@dataclass
class SystemInfo:
    device: str = "cpu"  # "cuda" | "cpu"
    gpu_name: str = ""
    gpu_count: int = 0
    driver: str = ""
    cuda: str = ""
    torch: str = ""
    triton: str = ""
    python: str = ""
    platform: str = ""
    cpu: str = ""
    l2_bytes: int = 0
    sm_clock_mhz: list[int] = field(default_factory=list)  # per shape: median SM clock of its timed calls
    max_sm_clock_mhz: int = 0  # the highest SM clock the GPU may run at; 0 when unreadable


@dataclass
class Finding:
    """Something the static pre-check saw in the source (harness/host/precheck.py), for the admins' report."""

    rule: str  # "side_stream", "thread", "monkey_patch", ...
    line: int
    message: str  # "line 12 starts threads or processes (threading.Thread; catalogue C7)"
    hold: bool = False  # a ranked run showing it is held for review instead of ranked


@dataclass
class SandboxInfo:
    """How the submission's processes were isolated (harness/isolation/sandbox.py), and what was left afterwards."""

    isolated: bool = False  # namespaces and the read-only view; False: resource limits only
    description: str = ""  # what the sandbox was, or why it could not be, in one line
    memory_limit_mb: int = 0  # the job's memory cap, sized from the job and the host
    leftovers: int = 0  # processes still running when the evaluation ended (all killed)
    gpu_idle: bool | None = None  # no compute process on the GPU after the job; None: not checked
    refused_tasks: int = 0  # new processes or threads the job's cgroup refused (harness/isolation/cgroups.py)
    throttled_periods: int = 0  # CPU periods the job was held to its cgroup's quota in


@dataclass
class EvalResult:
    status: Status
    mode: Mode
    problem: str
    tests: list[TestResult] = field(default_factory=list)
    shapes: list[ShapeStats] = field(default_factory=list)
    profiles: list[ProfileEntry] = field(default_factory=list)
    score_us: float | None = None
    ranking_by: str = "geom"
    failure: Failure | None = None
    system: SystemInfo = field(default_factory=SystemInfo)
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    gpu_s: float = 0.0
    compile_s: float = 0.0  # seconds compiling (Triton JIT, load_inline, torch.compile), not timed
    phases_s: dict[str, float] = field(default_factory=dict)  # where the wall time went, inside the evaluation
    findings: list[Finding] = field(default_factory=list)
    sandbox: SandboxInfo = field(default_factory=SandboxInfo)
    # "kernelrank": our timer, checks and defences; "author_evaluator": the problem's own eval.py measured and
    # judged this run (harness.host.author_eval), beside the submission in its process, without our defences
    measured_by: str = "kernelrank"
    method_version: str = METHOD_VERSION
    schema_version: int = SCHEMA_VERSION

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise DecodeError(f"unknown result schema version {version!r} (this build reads {SCHEMA_VERSION})")
        return from_jsonable(cls, data)

    @classmethod
    def from_json(cls, text: str | bytes) -> EvalResult:
        return cls.from_dict(json.loads(text))


@dataclass
class Progress:
    """A progress event from a running evaluation ("timing shape 2 of 5")."""

    stage: str  # "starting" | "compiling" | "testing" | "warming" | "timing" | "profiling"
    index: int = 0  # 1-based position within the stage, 0 when not counted
    total: int = 0
    detail: str = ""
