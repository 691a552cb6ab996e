"""Each author's best ranked run apart from the runs just finished: what a new report is compared with."""

from __future__ import annotations

from storage_testkit import Builder

from harness.result import Status
from storage import Store


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
