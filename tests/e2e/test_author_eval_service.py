"""A problem that ships its own evaluator, through the service: NATS, the core, a CPU worker, the real harness."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.contracts.messages import CommandKind
from tests.e2e.test_service import run_ids, texts

AUTHOR = Path(__file__).resolve().parents[1] / "fixtures" / "author_eval"


@pytest.fixture
def problems(problems: Path) -> Path:
    """The usual problems folder plus the cross-entropy problem, its shared files staged beside its task.yml."""
    folder = problems / "crossentropy"
    folder.mkdir()
    for name in ("reference.py", "eval.py"):
        shutil.copy(AUTHOR / "common" / name, folder / name)
    (folder / "task.yml").write_text((AUTHOR / "crossentropy" / "task.yml").read_text().replace("../common/", ""))
    return problems


@pytest.mark.slow
async def test_the_authors_evaluator_judges_and_scores_through_the_service(local_runner, make_system):
    system = await make_system(local_runner)
    source = (AUTHOR / "solutions" / "correct.py").read_text()
    good = await system.submit("ada", source, leaderboard="crossentropy")
    bad = await system.submit(
        "bob", (AUTHOR / "solutions" / "wrong.py").read_text(), leaderboard="crossentropy", mode="test"
    )
    finals = await system.finals(run_ids(good) | run_ids(bad), timeout_s=180)

    (good_reply,) = [finals[r] for r in run_ids(good)]
    assert good_reply.data["status"] == "passed" and good_reply.data["score_us"] > 0, texts(good_reply)
    assert "Measured and judged by the problem's own evaluator" in texts(good_reply)
    assert "geometric mean of per-shape means" in texts(good_reply)
    (bad_reply,) = [finals[r] for r in run_ids(bad)]
    assert bad_reply.data["status"] == "failed"
    # the evaluator's reason is a detail: its author reads it in `submission ID` (the channel sees the verdict)
    detail = await system.ask("bob", CommandKind.SUBMISSION, id=str(bad.data["submission_id"]))
    assert "differs from the reference's" in texts(detail), texts(detail)
