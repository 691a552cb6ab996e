"""What the harness is asked to do: one self-contained evaluation request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.codec import from_jsonable, to_jsonable
from harness.problem import Problem
from harness.result import Mode


@dataclass
class EvalJob:
    problem: Problem  # files travel with the job: the GPU machine needs nothing else
    submission_name: str  # the user's file name, e.g. "kernel.py" or "kernel.cu"
    submission_source: str
    mode: Mode = Mode.TEST
    device: str = "auto"  # "auto" (CUDA when present, else CPU) | "cuda" | "cpu"
    secret_seed: int | None = None  # combined with each public seed in ranked mode; never shown
    run_id: str = ""  # echoed in logs; also the nonce-free id of this evaluation
    memory_limit_mb: int = 16384  # host memory for the submission's process

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalJob:
        return from_jsonable(cls, data)
