"""Structured failures: how an exception or an exit becomes one clear paragraph for the user.

Inside the worker, ``Verdict`` ends an evaluation early; the supervisor turns it (or whatever it saw
from outside: a signal, a timeout, a flood) into the result's ``Failure`` and picks the status.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.job import EvalJob
from harness.limits import FILE_SIZE_LIMIT_BYTES, MAX_TASKS, OPEN_FILES, SCRATCH_MB
from harness.result import EvalResult, Failure, FailureKind, Status

LOG_TAIL_CHARS = 4000
_HARNESS_DIR = str(Path(__file__).resolve().parent)

# Kinds where the submission ran but its answer or its timing was not acceptable.
_FAILED_KINDS = frozenset(
    {
        FailureKind.WRONG_OUTPUT,
        FailureKind.BAD_OUTPUT_TYPE,
        FailureKind.ESCAPED_TIMING,
        FailureKind.IMPLAUSIBLE_TIME,
        FailureKind.UNTRUSTED_TIME,
        FailureKind.TAMPERING,
        FailureKind.HELD_FOR_REVIEW,
    }
)
_CUDA_ERROR_MARKS = (
    "cuda error",
    "illegal memory access",
    "device-side assert",
    "unspecified launch failure",
    "misaligned address",
    "illegal instruction",
    "cublas_status",
    "cudnn_status",
    "acceleratorerror",
)
_OOM_MARKS = ("out of memory", "can't allocate memory", "cannot allocate memory")
# The sandbox's limits as the submission meets them: a fork or thread refused, a descriptor or file size cap.
_LIMIT_ERRNOS = frozenset({errno.EAGAIN, errno.EMFILE, errno.ENFILE, errno.EFBIG, errno.ENOSPC})
_LIMIT_MARKS = ("can't start new thread", "too many open files", "file too large", "no space left on device")
# What the sandbox refuses, and the sentence that says why.
_NO_NETWORK = "Evaluations have no network."
_READ_ONLY = "Only the working directory and /tmp are writable in an evaluation."
_REFUSALS = {
    errno.EROFS: _READ_ONLY,
    errno.EACCES: _READ_ONLY,
    errno.EPERM: _READ_ONLY,
    errno.ENETUNREACH: _NO_NETWORK,
    errno.EHOSTUNREACH: _NO_NETWORK,
    errno.ECONNREFUSED: _NO_NETWORK,
    errno.EADDRNOTAVAIL: _NO_NETWORK,
}


class Verdict(Exception):
    """Raised inside the worker to end the evaluation with a structured failure."""

    def __init__(self, kind: FailureKind, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.failure = Failure(kind=kind, message=message, log_tail=log_tail[-LOG_TAIL_CHARS:])


@dataclass(frozen=True)
class Rejection:
    """A harness rule (or the problem's checker) refused an output: which rule, and whether the checker saw it."""

    kind: FailureKind
    rule: str  # "checker" or one of the rules in harness.judge.checking
    consulted: bool  # the problem's checker saw the output (and accepted it, unless rule == "checker")
    message: str


def status_for(kind: FailureKind) -> Status:
    if kind is FailureKind.TIMEOUT:
        return Status.TIMEOUT
    return Status.FAILED if kind in _FAILED_KINDS else Status.ERROR


def failed_result(job: EvalJob, failure: Failure, started: float) -> EvalResult:
    """The result of a job that ended with ``failure`` before any child reported (``started``: monotonic s)."""
    return EvalResult(
        status=status_for(failure.kind),
        mode=job.mode,
        problem=job.problem.name,
        ranking_by=job.problem.task.ranking_by,
        failure=failure,
        wall_s=time.monotonic() - started,
    )


def describe(spec: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in spec.items())


def summary(exc: BaseException) -> str:
    """``Type: first line of the message``."""
    text = _text(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a submission's exception may even fail to print itself
        return ""


def classify(exc: BaseException) -> FailureKind:
    names = " ".join(cls.__name__.lower() for cls in type(exc).__mro__)
    text = f"{names} {_text(exc)}".lower()
    if isinstance(exc, MemoryError) or "outofmemoryerror" in names or any(m in text for m in _OOM_MARKS):
        return FailureKind.OUT_OF_MEMORY
    if any(m in text for m in _CUDA_ERROR_MARKS):
        return FailureKind.CUDA_ERROR
    if isinstance(exc, OSError) and exc.errno in _LIMIT_ERRNOS or any(m in text for m in _LIMIT_MARKS):
        return FailureKind.RESOURCE_LIMIT
    return FailureKind.EXCEPTION


def sandbox_hint(exc: BaseException) -> str:
    """A sentence saying what the sandbox refused, when ``exc`` is such a refusal; else empty."""
    if isinstance(exc, socket.gaierror):
        return " " + _NO_NETWORK
    return f" {_REFUSALS[exc.errno]}" if isinstance(exc, OSError) and exc.errno in _REFUSALS else ""


def kernel_failure(exc: BaseException, during: str) -> Verdict:
    """An exception raised by (or surfacing right after) a call of ``custom_kernel``; a Verdict stays as it is."""
    if isinstance(exc, Verdict):
        return exc
    kind = classify(exc)
    what = summary(exc)
    message = {
        FailureKind.OUT_OF_MEMORY: f"custom_kernel ran out of memory during {during} ({what}). "
        "Allocate less: intermediate buffers count against the evaluation's limit.",
        FailureKind.CUDA_ERROR: f"A CUDA error stopped custom_kernel during {during} ({what}). This usually means "
        "an out-of-bounds access or an invalid launch configuration; check indices and "
        "grid sizes (compute-sanitizer finds the faulty access).",
        FailureKind.RESOURCE_LIMIT: f"custom_kernel hit a limit of the evaluation during {during} ({what}): an "
        f"evaluation may run {MAX_TASKS} processes and threads, keep {OPEN_FILES} files "
        f"open, and write files of up to {FILE_SIZE_LIMIT_BYTES // 2**20} MiB and at most "
        f"{SCRATCH_MB} MiB in all.",
    }.get(kind, f"custom_kernel raised {what} during {during}.{sandbox_hint(exc)} The traceback below shows where.")
    return Verdict(kind, message, user_traceback(exc))


def checker_failure(exc: BaseException, during: str) -> Verdict:
    """The problem's checker raised while looking at the submission's output."""
    kind = classify(exc)
    if kind is FailureKind.EXCEPTION:
        return Verdict(
            FailureKind.WRONG_OUTPUT,
            f"Wrong output on {during}: the problem's checker raised "
            f"{summary(exc)} on it, so it did not accept it. Return what the reference returns (the "
            "traceback shows what the checker expected).",
            user_traceback(exc),
        )
    return kernel_failure(exc, during)


def rejected(rejection: Rejection, during: str) -> Verdict:
    """The verdict for an output the checker or one of the harness's rules (``harness.judge.checking``) rejected."""
    if rejection.rule == "checker":
        return Verdict(
            rejection.kind, f"Wrong output on {during}: the problem's checker rejected it: {rejection.message}"
        )
    checker = "accepted the output" if rejection.consulted else "was not consulted"
    return Verdict(
        rejection.kind,
        f"Rejected on {during} by the harness's {rejection.rule} rule (the problem's "
        f"checker {checker}): {rejection.message}",
    )


def problem_failure(exc: BaseException, function: str, during: str | None, device: str) -> Verdict:
    """The problem's own ``function`` failed (``during`` None: at import): after a submission's CUDA fault,
    for lack of CUDA on this machine, or because the problem is broken."""
    what = f"{function} failed during {during}" if during else f"{function} failed to import"
    if (
        verdict := kernel_failure(exc, during or "the import")
    ).failure.kind is not FailureKind.EXCEPTION and device != "cpu":
        return verdict
    if device == "cpu" and "cuda" in f"{type(exc).__name__} {_text(exc)}".lower():
        return Verdict(
            FailureKind.UNSUPPORTED_DEVICE,
            f"This problem needs CUDA: its {what} on this machine, which "
            f"has no CUDA GPU ({summary(exc)}). Submit to a GPU runner.",
            user_traceback(exc),
        )
    if verdict.failure.kind is not FailureKind.EXCEPTION:
        return verdict
    return Verdict(
        FailureKind.INVALID_PROBLEM,
        f"The problem's {what} ({summary(exc)}). This is a fault of the "
        "problem, not of your submission; tell the leaderboard's maintainers.",
        user_traceback(exc),
    )


def process_ended(status: int, when: str) -> Failure:
    """The crash of a process of the submission's with wait ``status``, ``when`` it happened ("while ...")."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name if number in signal.valid_signals() else f"signal {number}"
        hint = " The system may have run out of memory." if number == signal.SIGKILL else ""
        return Failure(
            FailureKind.CRASH,
            f"The submission's process was killed by {name} "
            f"({signal.strsignal(number)}) {when}.{hint} The log below shows the last output.",
        )
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    return Failure(
        FailureKind.CRASH,
        f"The submission's process exited with code {code} {when}, before the "
        "harness had a verdict. A submission must not call sys.exit() or os._exit().",
    )


def user_traceback(exc: BaseException) -> str:
    """The traceback without the harness's own frames, so it points at the submission."""
    summary_ = traceback.TracebackException.from_exception(exc)
    summary_.stack = traceback.StackSummary.from_list(
        [frame for frame in summary_.stack if not frame.filename.startswith(_HARNESS_DIR)]
    )
    return "".join(summary_.format())[-LOG_TAIL_CHARS:]
