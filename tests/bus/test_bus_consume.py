"""The durable pull loop the core reads results through: batches, ack after the handler, redelivery."""

import asyncio

from core.contracts import subjects
from core.contracts.bus import Bus
from core.contracts.messages import RunResult, encode
from harness.result import EvalResult, Mode, Status


def result(run_id: str) -> RunResult:
    return RunResult(
        run_id=run_id,
        submission_id=1,
        gpu="CPU",
        result=EvalResult(status=Status.PASSED, mode=Mode.TEST, problem="identity"),
    )


async def ack_pending(js) -> int:
    return (await js.consumer_info(subjects.EVENTS, subjects.CORE_RESULTS)).num_ack_pending


async def test_a_waiting_backlog_arrives_as_one_batch(bus: Bus) -> None:
    for i in range(5):
        await bus.publish_result(result(f"r{i}"))
    batches: list[list[str]] = []
    done = asyncio.Event()

    async def handler(results: list[RunResult]) -> None:
        batches.append([r.run_id for r in results])
        if sum(map(len, batches)) == 5:
            done.set()

    async with await bus.consume_results(handler):
        await asyncio.wait_for(done.wait(), 10)
    assert batches == [["r0", "r1", "r2", "r3", "r4"]]


async def test_messages_are_acked_only_after_the_handler_returns(bus: Bus, js, eventually) -> None:
    inside, release = asyncio.Event(), asyncio.Event()

    async def slow(results: list[RunResult]) -> None:
        inside.set()
        await release.wait()

    for i in range(3):
        await bus.publish_result(result(f"r{i}"))
    async with await bus.consume_results(slow):
        await asyncio.wait_for(inside.wait(), 10)
        assert await ack_pending(js) == 3  # in the handler: nothing acknowledged yet
        release.set()

        async def all_acked() -> bool:
            return await ack_pending(js) == 0

        await eventually(all_acked)
    info = await js.consumer_info(subjects.EVENTS, subjects.CORE_RESULTS)
    assert info.ack_floor.stream_seq == 3


async def test_a_failing_handler_gets_the_batch_again(bus: Bus) -> None:
    failed: list[str] = []
    again: set[str] = set()
    done = asyncio.Event()

    async def flaky(results: list[RunResult]) -> None:
        if not failed:
            failed.extend(r.run_id for r in results)
            raise RuntimeError("database briefly unavailable")
        again.update(r.run_id for r in results)
        if again == {"r0", "r1"}:
            done.set()

    await bus.publish_result(result("r0"))
    await bus.publish_result(result("r1"))
    async with await bus.consume_results(flaky, nak_delay_s=0.1):
        await asyncio.wait_for(done.wait(), 10)
    assert failed == ["r0", "r1"]


async def test_the_durable_resumes_where_it_stopped(bus: Bus) -> None:
    seen: list[str] = []
    got = asyncio.Queue()

    async def handler(results: list[RunResult]) -> None:
        seen.extend(r.run_id for r in results)
        got.put_nowait(None)

    await bus.publish_result(result("before"))
    async with await bus.consume_results(handler):
        await asyncio.wait_for(got.get(), 10)
    await bus.publish_result(result("while-stopped"))
    async with await bus.consume_results(handler):
        await asyncio.wait_for(got.get(), 10)
    assert seen == ["before", "while-stopped"]


async def test_unreadable_messages_and_ones_naming_another_worker_are_dropped_without_stopping_the_loop(
    bus: Bus, js, eventually
) -> None:
    got: list[str] = []
    done = asyncio.Event()

    async def handler(results: list[RunResult]) -> None:
        got.extend(r.run_id for r in results)
        done.set()

    await js.publish(subjects.result_subject("", "bad1"), b"\xff\xfe not json")
    await js.publish(subjects.result_subject("", "bad2"), b'{"v": 1, "run_id": 5}')
    await js.publish(subjects.result_subject("w-b", "bad3"), encode(result("bad3")))  # its body names no worker
    await bus.publish_result(result("good"))
    async with await bus.consume_results(handler):
        await asyncio.wait_for(done.wait(), 10)

        async def nothing_pending() -> bool:
            return await ack_pending(js) == 0

        await eventually(nothing_pending)  # the bad ones were term()'d, not left to redeliver
    assert got == ["good"]


async def test_a_duplicate_result_is_stored_once(bus: Bus, count) -> None:
    await bus.publish_result(result("same"))
    await bus.publish_result(result("same"))
    assert await count(subjects.EVENTS) == 1


async def test_a_stop_ends_an_idle_fetch_at_once_and_the_next_consumer_gets_what_follows(bus: Bus) -> None:
    """Fetches that would wait an hour: a stop that waited one out would fail here (``wait_for``'s 30 s)."""
    seen: list[str] = []
    got = asyncio.Event()

    async def handler(results: list[RunResult]) -> None:
        seen.extend(r.run_id for r in results)
        got.set()

    idle = await bus.consume_results(handler, poll_s=3600)
    await asyncio.sleep(0.1)  # its fetch is waiting on the server now
    await asyncio.wait_for(idle.stop(), 30)
    await bus.publish_result(result("after"))
    again = await bus.consume_results(handler, poll_s=3600)
    await asyncio.wait_for(got.wait(), 10)
    await asyncio.wait_for(again.stop(), 30)
    assert seen == ["after"]
