"""Each author's best ranked run apart from the runs just finished: what a new report is compared with."""

from __future__ import annotations

from storage_testkit import Builder

from harness.result import Status
from storage import Store
from storage.records import WriteBatch


def test_previous_best_ignores_the_new_runs_and_what_does_not_count(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    old = build.submit(ann, 12.0)
    best = build.submit(ann, 9.0)
    build.submit(ann, 1.0, mode="test")  # not ranked
    build.submit(ann, None, Status.FAILED)
    build.submit(bob, 5.0, gpus=("A100",))
    new = build.submit(ann, 8.0)
    found = store.previous_bests(
        [("vecadd", "H100", ann), ("vecadd", "A100", bob), ("vecadd", "H100", bob)], [new.runs[0][0]]
    )
    assert set(found) == {("vecadd", "H100", ann), ("vecadd", "A100", bob)}
    mine = found[("vecadd", "H100", ann)]
    assert (mine.submission_id, mine.run_id) == (best.id, best.runs[0][0]) and old.id != best.id
    assert [(spec["size"], median) for spec, median in mine.shapes] == [(1024, 9.0), (2048, 10.0)]
    assert store.previous_bests([], []) == {}


def test_a_round_of_results_tells_each_entry_as_it_was_before_it(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    best = build.submit(ann, 9.0)
    build.submit(ann, 12.0)
    (first, better) = store.add_submissions([build.new(ann), build.new(bob)])
    recorded = store.write(
        WriteBatch(results=[build.result(first.runs[0][0], 8.0), build.result(better.runs[0][0], 5.0)])
    )
    assert recorded.stored == [True, True]
    assert set(recorded.previous) == {("vecadd", "H100", ann), ("vecadd", "H100", bob)}
    assert recorded.previous[("vecadd", "H100", bob)] is None  # Bob's first entry
    mine = recorded.previous[("vecadd", "H100", ann)]
    assert (mine.submission_id, mine.run_id) == (best.id, best.runs[0][0])
    assert mine == store.previous_bests([("vecadd", "H100", ann)], [first.runs[0][0]])[("vecadd", "H100", ann)]
    assert [rank.score_us for rank in store.ranking("vecadd", "H100")] == [5.0, 8.0]  # and the entries moved on
