"""The core's reads under a crowd: a public read past the bound is refused at once with a retry time, one whose
asker has gone is dropped before it runs, and a submission is never refused for it."""

from __future__ import annotations

import os
import threading
import time

import pytest
from handler_kit import CORRECT, actor

from core.contracts.answer_by import ANSWER_BY, Abandoned
from core.contracts.commands import query_command, submit_command
from core.contracts.messages import CommandKind, Platform, ReplyTo, Tone
from core.service import db as db_module
from core.service.handlers import dispatch


async def test_a_read_whose_asker_has_gone_is_not_run(deps) -> None:
    deps, _ = deps
    ran = []
    token = ANSWER_BY.set(time.monotonic() - 1)
    try:
        with pytest.raises(Abandoned):
            await deps.db.read(ran.append, "read")
    finally:
        ANSWER_BY.reset(token)
    assert ran == []


async def test_past_the_bound_a_public_read_is_refused_with_a_retry_time_and_a_submission_goes_on(
    deps, monkeypatch
) -> None:
    deps, _ = deps
    monkeypatch.setattr(db_module, "MAX_QUERY_READS", 0)
    token = ANSWER_BY.set(time.monotonic() + 60)
    try:
        busy = await dispatch(query_command(actor("ada"), ReplyTo(Platform.DISCORD, "c"), CommandKind.LIST), deps)
    finally:
        ANSWER_BY.reset(token)
    assert busy.tone is Tone.ERROR and busy.data == {"error": "unavailable", "retry_after_s": db_module.BUSY_RETRY_S}
    assert "try again in" in busy.parts[0].text
    accepted = await dispatch(
        submit_command(
            actor("ada"), ReplyTo(Platform.DISCORD, "c"), "k.py", CORRECT, leaderboard="vectoradd", gpu=["CPU"]
        ),
        deps,
    )
    assert accepted.data["runs"]


async def test_public_reads_run_below_the_submissions_priority(deps) -> None:
    deps, _ = deps

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    token = ANSWER_BY.set(time.monotonic() + 60)
    try:
        query = await deps.db.read(niceness)
    finally:
        ANSWER_BY.reset(token)
    assert query >= await deps.db.read(niceness) + db_module.QUERY_NICENESS or query == 19
