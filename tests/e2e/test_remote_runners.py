"""A submission served by the modal backend, end to end: the user's report and ``stats`` show what it cost.

Modal is the stand-in from ``fakes.modal`` running the app's real function body, so the run goes command ->
core -> queue -> worker -> ModalRunner -> the harness on CPU -> result -> DuckDB -> reply.
"""

from __future__ import annotations

import re
from pathlib import Path

from fakes.modal import FakeModal

from core.contracts.bus import Bus
from core.contracts.messages import CommandKind
from runners import modal_app
from runners.modal_backend import ModalRunner, function_name

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harness"
CORRECT = (FIXTURES / "submissions" / "correct.py").read_text()
PRICE = 0.001097


def texts(reply) -> str:
    return "\n".join([p.text for p in reply.parts] + [" ".join(r) for p in reply.parts for r in p.rows])


async def test_a_modal_run_reports_its_gpu_time_and_cost_to_the_user_and_in_stats(
    make_system, nats_url, monkeypatch
) -> None:
    for variable in modal_app.CACHE_DIRS.values():  # the body points them at per-job copies: undo that after
        monkeypatch.delenv(variable, raising=False)
    fake = FakeModal({"kernelrank": {function_name("CPU"): modal_app.run_job}})
    calls_bus = await Bus.connect(nats_url, name="e2e-calls")
    try:
        runner = ModalRunner("CPU", await calls_bus.runner_calls(), modal_api=fake, price_per_s=PRICE, poll_s=0.1)
        system = await make_system(runner)
        accepted = await system.submit("ada", CORRECT, leaderboard="vectoradd", mode="test")
        (run_id,) = {run["run_id"] for run in accepted.data["runs"]}
        final = (await system.finals({run_id}, timeout_s=90))[run_id]
        detail = (await system.details({run_id}))[run_id]  # where it ran and what it cost: the author's
        stats = await system.ask("ada", CommandKind.STATS)
    finally:
        fake.close()
        await calls_bus.close()

    assert final.data["status"] == "passed" and len(fake.spawned) == 1
    cost = final.data["cost_usd"]
    assert cost == round(final.data["gpu_s"] * PRICE, 6) and cost > 0
    assert re.search(r"GPU time \d+\.\d s, about \$0\.\d{4}\.", texts(detail)), texts(detail)
    (usage,) = [row for part in stats.parts if "GPU hours" in part.headers for row in part.rows]
    assert usage[:2] == ["CPU", "1"] and usage[3] == f"${cost:.4f}"
    assert ["estimated cost", f"${cost:.4f}"] in [row for part in stats.parts for row in part.rows]
