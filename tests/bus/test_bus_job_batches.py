"""Jobs handed out in batches (``core.contracts.bus._work``): a worker that asks for several gets those waiting in
one answer, each its own delivery to settle, never more than one message carries, and a job of any size still
reaches it."""

from core.contracts import subjects
from core.contracts.bus import Bus

GPU = "CPU"


async def test_a_worker_asking_for_several_jobs_gets_those_waiting_each_its_own_to_settle(
    bus: Bus, js, make_job, eventually
) -> None:
    jobs = [make_job() for _ in range(3)]
    for job in jobs:
        assert await bus.publish_job(job)
    queue = await bus.jobs(GPU, "w1")

    granted = await queue.fetch(timeout_s=5, limit=5)

    assert sorted(one.message.run_id for one in granted) == sorted(job.run_id for job in jobs)
    assert [one.deliveries for one in granted] == [1, 1, 1]
    assert len({one.message.result_key for one in granted}) == 3  # each attempt its own key
    for one in granted:
        await one.ack()

    async def drained() -> bool:
        info = await js.consumer_info(subjects.JOBS, subjects.runner_durable(GPU))
        return info.num_ack_pending == 0 and info.num_pending == 0

    await eventually(drained)


async def test_jobs_too_large_to_travel_together_come_in_several_answers_and_one_over_the_budget_alone(
    bus: Bus, make_job
) -> None:
    big = "#" * (bus.max_payload * 2 // 5)  # two fit one answer, three do not
    jobs = [make_job(source=big) for _ in range(3)]
    huge = make_job(source="#" * (bus.max_payload - 8 * 1024))  # as large as a job may be: over a batch's budget
    for job in [*jobs, huge]:
        assert await bus.publish_job(job)
    queue = await bus.jobs(GPU, "w1")

    answers = []
    while len(sum(answers, [])) < 4:
        granted = await queue.fetch(timeout_s=5, limit=32)
        assert granted, "a job was not handed out"
        answers.append(granted)
        for one in granted:
            await one.ack()

    assert [len(granted) for granted in answers] == [2, 1, 1]
    assert [one.message.run_id for one in sum(answers, [])] == [job.run_id for job in [*jobs, huge]]
