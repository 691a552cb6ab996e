"""A problem whose reference returns torch's named tuple, through the service: NATS, the core, a CPU worker, the real
harness. The public qr_py reference submission failed every test here when the tuple reached the checker as a
list (issue 26)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runners.local import LocalRunner
from tests.e2e.test_service import run_ids, texts

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"


@pytest.fixture
def problems(problems: Path) -> Path:
    """The usual problems folder plus qr_py, its shared files beside its task.yml and the CPU among its devices
    (GPU MODE's format is CUDA-only)."""
    folder = problems / "qr_py"
    shutil.copytree(CONFORMANCE / "problems" / "qr_py", folder)
    for name in ("utils.py", "template.py"):
        shutil.copy(CONFORMANCE / "problems" / name, folder / name)
    task = (folder / "task.yml").read_text().replace("../utils.py", "utils.py").replace("../template.py", "template.py")
    (folder / "task.yml").write_text(task + "devices: [cpu, cuda]\n")
    return problems


@pytest.mark.slow
async def test_a_named_tuple_reference_passes_through_the_service(make_system):
    system = await make_system(LocalRunner())
    source = (CONFORMANCE / "solutions" / "qr_py" / "correct" / "geqrf.py").read_text()
    accepted = await system.submit("ada", source, leaderboard="qr_py")
    finals = await system.finals(run_ids(accepted), timeout_s=240)

    (reply,) = finals.values()
    assert reply.data["status"] == "passed" and reply.data["score_us"] > 0, texts(reply)
