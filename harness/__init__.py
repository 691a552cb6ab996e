"""kernelrank's evaluation harness: problems, jobs, isolated evaluation and the result schema.

The public surface is below; everything else is an implementation module. Importing this package
never imports torch (only the harness server's children need it), and the server modules load on
first use, so ``python -m harness.host.server_process`` runs its module exactly once.
"""

from typing import Any

from harness.job import EvalJob
from harness.loading import load_problem
from harness.problem import Problem, ProblemError
from harness.result import EvalResult, Failure, FailureKind, Mode, Progress, Status

_FROM_SERVER = ("HarnessServer", "HarnessStartError", "evaluate")

__all__ = [
    "EvalJob",
    "EvalResult",
    "Failure",
    "FailureKind",
    "Mode",
    "Problem",
    "ProblemError",
    "Progress",
    "Status",
    "load_problem",
    *_FROM_SERVER,
]


def __getattr__(name: str) -> Any:
    if name in _FROM_SERVER:
        from harness.host import server

        return getattr(server, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
