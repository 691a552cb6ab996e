"""The core's writer: writes of the outcomes lane that follow one another within its gather window share one
round (one transaction, one commit), and each is stored before its waiter hears of it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from handler_kit import NOW

from core.service import db as db_module
from core.service.db import Database, Writer
from harness.result import EvalResult, Mode, Status
from storage.records import NewSubmission, ResultRecord, WriteBatch
from storage.store import Store


def new_submission(command_id: str, run_ids: list[str]) -> NewSubmission:
    return NewSubmission(
        command_id=command_id,
        person_id=1,
        leaderboard="vectoradd",
        file_name="k.py",
        source=f"# {command_id}\n",
        mode="test",
        runs=[(run_id, "CPU") for run_id in run_ids],
        reply_to={"platform": "cli", "channel": "c"},
        created_at=NOW,
    )


async def test_a_running_mark_and_a_result_that_follows_it_share_one_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_module, "OUTCOMES_GATHER_S", 0.5)  # long enough for a loaded machine's few loop turns
    store = Store(tmp_path / "kernelrank.duckdb")
    db = Database(store)
    rounds: list[WriteBatch] = []
    write = store.write
    monkeypatch.setattr(store, "write", lambda batch: rounds.append(batch) or write(batch))
    writer = Writer(db)
    try:
        await writer.submission(new_submission("cmd-1", ["run-a", "run-b"]))
        running = asyncio.create_task(writer.running([("run-a", "w1"), ("run-b", "w1")]))
        for _ in range(3):  # the lane wakes and would start its round now, without a gather window
            await asyncio.sleep(0)
        result = EvalResult(status=Status.PASSED, mode=Mode.TEST, problem="vectoradd")
        stored = await writer.results([ResultRecord("run-a", result, "w1", 1, NOW)])
        await running
        assert stored.stored == [True]
        assert len(rounds) == 1  # one transaction for both
        assert (store.run("run-a").state, store.run("run-b").state) == ("done", "running")  # stored on return
    finally:
        await writer.close()
        await db.close()
