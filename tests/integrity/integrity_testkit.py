"""Helpers of the integrity tests (the cases themselves are data in cases.py)."""

from __future__ import annotations

import pytest
from cases import Case, judge_reads_runner_memory

from harness import HarnessServer
from harness.isolation import processes


def params(cases: list[Case]) -> list[object]:
    """Cases as pytest parameters: CUDA and slow ones marked, ids like "C7-c07_background_thread"."""
    return [
        pytest.param(
            case,
            marks=[mark for mark, on in ((pytest.mark.cuda, case.cuda), (pytest.mark.slow, case.slow)) if on]
            + _memory_marks(case),
            id=f"{case.entry.replace(' ', '-')}-{case.name}{'-cuda' if case.cuda else ''}"
            + ("" if case.problem == "fixture" else f"-{case.problem}"),
        )
        for case in cases
    ]


def _memory_marks(case: Case) -> list[pytest.MarkDecorator]:
    """A case the judge catches by reading the runner's memory is skipped, with the reason, where it may not."""
    why = judge_reads_runner_memory() if case.memory else ""
    return [pytest.mark.skip(reason=f"the judge cannot read the runner's memory here: {why}")] if why else []


def nothing_left(server: HarnessServer) -> list[int]:
    """Processes still running below the harness server (there must be none between jobs but its zygote)."""
    assert server._process is not None and server.running, "the harness server died"
    assert server.zygote, "the harness server named no zygote"
    return [p.pid for p in processes.descendants(server._process.pid, spare=server.zygote)]
