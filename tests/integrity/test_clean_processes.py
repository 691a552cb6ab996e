"""Clean processes (issue 20): no evaluation's process holds memory that held another job's source or output.

Every evaluation is forked from the harness server's zygote, which imported torch before the first job and
never receives one (``harness.isolation.zygote``). The test plants a random marker in one job (in its source and in what
it prints), checks that the marker did pass through the harness server's own memory (so a child forked from
the server could inherit it), and then lets the next job on the same server search all of its own memory for
it: it must find its own control marker and nothing of the first job's.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path

import pytest
from cases import PROBLEMS

from harness import EvalJob, HarnessServer, Mode, Status, load_problem

PROBE = Path(__file__).resolve().parent / "probes" / "find_marker.py"
PREFIX = "KRM" + "ARK-"


def _job(source: str) -> EvalJob:
    return EvalJob(
        problem=load_problem(PROBLEMS["fixture"]),
        submission_name="submission.py",
        submission_source=source,
        mode=Mode.TEST,
        device="cpu",
    )


def _planting(marker: str) -> str:
    return (
        f"# {marker}\nimport torch\n\nSECRET = {marker!r}\nprint(SECRET * 2, flush=True)\n\n\n"
        "def custom_kernel(data):\n    a, b, out = data\n    return torch.add(a, b, out=out)\n"
    )


def _in_memory_of(pid: int, needle: bytes) -> bool | None:
    """Whether ``needle`` is in the readable private memory of process ``pid``; None when it cannot be read."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            for line in maps:
                fields = line.split()
                if "r" not in fields[1] or (len(fields) > 5 and not fields[5].startswith("[")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                try:
                    mem.seek(start)
                    if needle in mem.read(end - start):
                        return True
                except OSError:
                    continue
    except OSError:
        return None
    return False


@pytest.mark.slow
def test_the_next_job_finds_nothing_of_the_previous_one():
    marker = PREFIX + secrets.token_hex(16)
    with HarnessServer() as server:
        planted = server.evaluate(_job(_planting(marker)))
        assert planted.status is Status.PASSED, planted.failure
        assert marker in planted.stdout
        assert server._process is not None
        held = _in_memory_of(server._process.pid, marker.encode())
        searched = server.evaluate(_job(PROBE.read_text()))
    assert searched.status is Status.PASSED, searched.failure
    report = json.loads(searched.stdout.splitlines()[0])
    assert report["control"], "the search did not find the marker it planted itself: it cannot be trusted"
    assert report["others"] == [], f"the second job found another job's marker in its memory: {report['others']}"
    if held is None:
        pytest.skip("this host does not let the test read the harness server's memory (the rest held)")
    assert held, "the first job's marker never reached the server's memory, so this test proves nothing"


def test_the_probe_pattern_does_not_match_itself():
    assert not re.search(rb"KRM" + rb"ARK-[0-9a-f]{32}", PROBE.read_bytes())
