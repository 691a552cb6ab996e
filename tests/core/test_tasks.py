"""Stopping a background task for certain, even one that lost a cancellation."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from core.contracts.tasks import cancel_and_wait


async def _loses_its_first_cancellation() -> None:
    with contextlib.suppress(asyncio.CancelledError):  # dropped, as asyncio.wait_for can drop one on 3.11
        await asyncio.sleep(30)
    while True:  # a retry loop that carries on
        await asyncio.sleep(30)


async def test_a_task_that_lost_a_cancellation_is_cancelled_again() -> None:
    task = asyncio.create_task(_loses_its_first_cancellation())
    await asyncio.sleep(0)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=0.2)
    assert not done  # one cancellation is not enough for it
    await asyncio.wait_for(cancel_and_wait(task, every_s=0.05), 5)
    assert task.cancelled()


async def test_a_task_that_failed_raises_its_failure() -> None:
    async def fails() -> None:
        raise RuntimeError("broken")

    task = asyncio.create_task(fails())
    await asyncio.wait({task})
    with pytest.raises(RuntimeError, match="broken"):
        await cancel_and_wait(task)
