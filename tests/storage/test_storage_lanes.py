"""The store's two write lanes commit at the same time without conflicts: intake inserts new submissions while
outcomes updates runs committed earlier (running marks, results, replied marks, personal bests)."""

from __future__ import annotations

import threading

from storage_testkit import Builder

from storage import Store
from storage.records import WriteBatch

ROUNDS = 40


def test_intake_and_outcomes_commit_side_by_side(store: Store, build: Builder) -> None:
    people = [build.person(f"P{i}") for i in range(4)]
    earlier = store.add_submissions([build.new(people[i % 4]) for i in range(ROUNDS * 4)])
    errors: list[BaseException] = []

    def intake() -> None:
        try:
            for i in range(ROUNDS):
                store.add_submissions([build.new(people[(i + k) % 4]) for k in range(4)])
        except BaseException as exc:
            errors.append(exc)

    def outcomes() -> None:
        try:
            for i in range(ROUNDS):
                chunk = [run_id for sub in earlier[i * 4 : (i + 1) * 4] for run_id, _ in sub.runs]
                store.write(WriteBatch(running=[(run_id, "w") for run_id in chunk]))
                assert store.write(
                    WriteBatch(results=[build.result(run_id, 10.0 + i) for run_id in chunk], replied=chunk)
                ).stored == [True] * len(chunk)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=intake), threading.Thread(target=outcomes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.stats().submissions == ROUNDS * 8
    assert store.unfinished_runs() and all(run.state == "queued" for run in store.unfinished_runs())
    assert store.unreplied([run_id for sub in earlier for run_id, _ in sub.runs]) == set()
    assert [row.score_us for row in store.ranking("vecadd", "H100")] == [10.0] * 4  # everyone's first and best
