"""Issue 25's points 7 and 8: a job's files count as the disk they hold, and the runner reaches nothing but itself.

Disk: a file's blocks can exceed its size (``fallocate`` with ``FALLOC_FL_KEEP_SIZE`` on the captured stdout reserved
2 GiB of the host's disk while the size stayed 0); the watch counts blocks (``harness.host.breaches``) and the runner's
seccomp filter refuses the reservation outright. Reach: the runner's filter refused signals only to lower process ids,
but the judge's later threads have higher ones; now every call that names a process must name the runner itself
(tests/harness/test_seccomp.py probes each call; here a submission aims them at its real judge).
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest
from cases import PASSED, Case

from harness import EvalJob, FailureKind, Mode, Status, load_problem
from harness.host import breaches
from harness.isolation.staging import Stage
from harness.limits import Limits

AUTHOR = Path(__file__).resolve().parents[1] / "fixtures" / "author_eval"
_KEEP_SIZE = 1


def _reserve(path: Path, size: int) -> None:
    """Blocks for ``size`` bytes, the file's size left as it was."""
    with open(path, "ab") as file:
        if ctypes.CDLL(None).fallocate(file.fileno(), _KEEP_SIZE, ctypes.c_long(0), ctypes.c_long(size)) != 0:
            pytest.skip("this filesystem cannot reserve blocks")


def test_captured_output_counts_the_blocks_it_holds_not_its_size(tmp_path):
    stage = Stage.empty(tmp_path)
    stage.stdout_path.write_text("a line\n")
    assert breaches.flooded(stage, "testing 1 of 2") is None
    _reserve(stage.stderr_path, breaches.PREALLOCATION * breaches.FLOOD_BYTES + 2**20)
    assert stage.stderr_path.stat().st_size == 0  # what RLIMIT_FSIZE and a size check see
    failure = breaches.flooded(stage, "testing 1 of 2")
    assert failure is not None and failure.kind is FailureKind.OUTPUT_FLOOD


def test_folders_on_the_hosts_disk_count_their_blocks_however_deep(tmp_path):
    """Without namespaces the working directory and scratch are on the host's disk; their cap is the scratch's."""
    stage = Stage.empty(tmp_path)
    small = Limits(memory_mb=1024, cpu_s=10, scratch_mb=1)
    deep = stage.scratch.joinpath(*["nested"] * 40)
    deep.mkdir(parents=True)
    (stage.workdir / "notes.txt").write_text("fine\n")
    assert breaches.too_much_disk(stage, small, "testing 1 of 2") is None
    _reserve(deep / "held", breaches.PREALLOCATION * 2**20 + 2**20)
    failure = breaches.too_much_disk(stage, small, "testing 1 of 2")
    assert failure is not None and failure.kind is FailureKind.RESOURCE_LIMIT and "MiB of disk" in failure.message


def test_a_runner_cannot_reserve_disk_through_its_output(run_case, harness_server):
    result = run_case(Case("reserves_disk.py", "reserves disk past stdout's size", "", (PASSED,), mode=Mode.TEST))
    line = next(line for line in result.stdout.splitlines() if line.startswith("reservations:"))
    assert "held" not in line and line.count("'ENOTSUP'") >= 3, line  # refused (or, reopened, not even opened)
    assert result.status is Status.PASSED, result.failure


def test_an_authors_evaluator_that_reserves_disk_through_stdout_is_a_flood(harness_server):
    """No seccomp filter in that process: the watch's count of blocks stops it."""
    job = EvalJob(
        problem=load_problem(AUTHOR / "crossentropy"),
        submission_name="submission.py",
        mode=Mode.TEST,
        secret_seed=12345,
        submission_source=(AUTHOR / "solutions" / "reserves_stdout.py").read_text(),
    )
    result = harness_server.evaluate(job)
    assert result.status is not Status.PASSED
    assert result.failure is not None and result.failure.kind is FailureKind.OUTPUT_FLOOD, result.failure


@pytest.mark.skipif(sys.platform != "linux", reason="a Linux seccomp filter")
def test_a_runner_cannot_kill_limit_or_reschedule_its_judge(run_case, harness_server):
    if "not isolated" in harness_server.sandbox:
        pytest.skip("aims at its parent's threads only inside the sandbox's PID namespace")
    result = run_case(Case("reaches_the_judge.py", "aims at the judge's threads", "", (PASSED,), mode=Mode.TEST))
    assert result.status is Status.PASSED, result.failure  # the judge lived to decide
    line = next(line for line in result.stdout.splitlines() if line.startswith("judge threads:"))
    assert "'EPERM'" in line and "done" not in line and "ESRCH" not in line, line
