"""The ranking rule: best passed ranked run per person and GPU, ties to the earlier submission."""

from __future__ import annotations

import random
from datetime import timedelta

from storage_testkit import T0, Builder, eval_result

from harness.result import Status
from storage import Store
from storage.records import ResultRecord


def ranked(store: Store, gpu: str = "H100") -> list[tuple[int, str, float]]:
    return [(row.rank, row.display_name, row.score_us) for row in store.ranking("vecadd", gpu)]


def test_each_person_ranks_by_their_best_run(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    for score in (10.0, 8.0, 12.0):
        build.submit(ann, score)
    best = build.submit(bob, 9.0)
    assert ranked(store) == [(1, "Ann", 8.0), (2, "Bob", 9.0)]
    row = store.rank_of("vecadd", "H100", bob)
    assert (row.rank, row.submission_id, row.run_id) == (2, best.id, best.runs[0][0])
    assert row.submitted_at == best.created_at


def test_only_passed_runs_of_ranked_submissions_count(store: Store, build: Builder) -> None:
    ann, cat = build.person("Ann"), build.person("Cat")
    build.submit(ann, 20.0)
    build.submit(cat, 1.0, mode="benchmark")
    build.submit(cat, 1.0, mode="test")
    build.submit(cat, None, Status.ERROR)
    build.submit(cat, None, Status.TIMEOUT)
    (failed,) = store.add_submissions([build.new(cat)])
    wrong_but_fast = eval_result(Status.PASSED, 0.5)
    wrong_but_fast.status = Status.FAILED  # a failed run that still carries a score must not rank
    store.record_results([ResultRecord(failed.runs[0][0], wrong_but_fast, "w1", 1, T0)])
    store.add_submissions([build.new(cat)])  # queued, no result yet
    assert ranked(store) == [(1, "Ann", 20.0)]
    assert store.rank_of("vecadd", "H100", cat) is None


def test_equal_scores_rank_by_submission_time_with_distinct_ranks(store: Store, build: Builder) -> None:
    ann, bob, cat = build.person("Ann"), build.person("Bob"), build.person("Cat")
    later = store.add_submissions([build.new(ann, at=T0 + timedelta(hours=2))])[0]
    earlier = store.add_submissions([build.new(bob, at=T0 + timedelta(hours=1))])[0]
    first_of_two = store.add_submissions([build.new(cat, at=T0 + timedelta(hours=3))])[0]
    second_of_two = store.add_submissions([build.new(cat, at=T0 + timedelta(hours=4))])[0]
    # Results arrive in the opposite order of submission.
    for sub in (second_of_two, first_of_two, later, earlier):
        store.record_results([build.result(sub.runs[0][0], 5.0)])
    assert ranked(store) == [(1, "Bob", 5.0), (2, "Ann", 5.0), (3, "Cat", 5.0)]
    assert store.rank_of("vecadd", "H100", cat).submission_id == first_of_two.id


def test_each_gpu_has_its_own_ranking(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    (sub,) = store.add_submissions([build.new(ann, gpus=("H100", "T4"))])
    h100, t4 = (run_id for run_id, _ in sub.runs)
    store.record_results([build.result(h100, 4.0), build.result(t4, 30.0)])
    build.submit(bob, 6.0, gpus=("H100",))
    build.submit(bob, 20.0, gpus=("T4",))
    assert ranked(store, "H100") == [(1, "Ann", 4.0), (2, "Bob", 6.0)]
    assert ranked(store, "T4") == [(1, "Bob", 20.0), (2, "Ann", 30.0)]
    assert store.leader("vecadd", "T4").display_name == "Bob"
    assert store.leader("vecadd", "A100") is None
    assert [row.display_name for row in store.ranking("vecadd", "H100", limit=1)] == ["Ann"]


def test_cross_gpu_lists_offered_gpus_in_order_then_others(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    build.submit(ann, 4.0, gpus=("H100",))
    build.submit(bob, 3.0, gpus=("H100",))
    build.submit(ann, 9.0, gpus=("A100",))  # not offered (any more), but it has entries
    rows = [(g.gpu, g.leader_name, g.best_score_us, g.people) for g in store.cross_gpu("vecadd")]
    assert rows == [("H100", "Bob", 3.0, 2), ("T4", None, None, 0), ("A100", "Ann", 9.0, 1)]


def test_a_new_display_name_shows_in_the_ranking(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    build.submit(ann, 4.0)
    store.person("cli", "ann", "Ann the Fast")
    assert ranked(store) == [(1, "Ann the Fast", 4.0)]


def test_incremental_entries_match_a_rebuild_and_a_plain_reference(store: Store, build: Builder) -> None:
    rng = random.Random(20260301)
    people = [build.person(f"P{i}") for i in range(12)]
    facts = []  # (person, gpu, mode, status, score, submitted_at, submission_id, run_id)
    pending = []
    for _ in range(30):
        batch = [
            build.new(
                rng.choice(people),
                gpus=tuple(rng.sample(["H100", "T4"], rng.randint(1, 2))),
                mode=rng.choice(["ranked", "ranked", "ranked", "benchmark", "test"]),
                at=T0 + timedelta(minutes=rng.randint(0, 60)),
            )  # equal times happen
            for _ in range(rng.randint(1, 6))
        ]
        for sub, item in zip(store.add_submissions(batch), batch, strict=True):
            for run_id, gpu in sub.runs:
                status = rng.choice([Status.PASSED] * 4 + [Status.FAILED, Status.ERROR])
                score = float(rng.choice([3, 4, 5, 6])) if status is Status.PASSED else None  # many ties
                facts.append((item.person_id, gpu, item.mode, status, score, sub.created_at, sub.id, run_id))
                pending.append(build.result(run_id, score, status))
        rng.shuffle(pending)
        store.record_results(pending[: len(pending) // 2])  # results arrive late and out of order
        del pending[: len(pending) // 2]
    store.record_results(pending)

    def reference(gpu: str) -> list[tuple[int, float, int, str]]:
        best = {}
        for person, run_gpu, mode, status, score, at, sub_id, run_id in facts:
            if run_gpu == gpu and mode == "ranked" and status is Status.PASSED:
                best[person] = min(best.get(person, (score, at, sub_id, run_id)), (score, at, sub_id, run_id))
        ordered = sorted(best.items(), key=lambda kv: kv[1])
        return [(person, score, sub_id, run_id) for person, (score, _, sub_id, run_id) in ordered]

    def stored(gpu: str) -> list[tuple[int, float, int, str]]:
        rows = store.ranking("vecadd", gpu)
        assert [row.rank for row in rows] == list(range(1, len(rows) + 1))
        return [(row.person_id, row.score_us, row.submission_id, row.run_id) for row in rows]

    for gpu in ("H100", "T4"):
        assert stored(gpu) == reference(gpu)
        assert len(reference(gpu)) > 5
    assert store.rebuild_rankings() == sum(len(reference(gpu)) for gpu in ("H100", "T4"))
    for gpu in ("H100", "T4"):
        assert stored(gpu) == reference(gpu)


def test_a_standing_is_the_top_and_the_people_asked_for_with_their_ranks(store: Store, build: Builder) -> None:
    people = [build.person(f"P{i}") for i in range(8)]
    for person, score in zip(people, range(8, 0, -1), strict=True):  # the last person is fastest
        build.submit(person, float(score))
    everyone = {row.person_id: row for row in store.ranking("vecadd", "H100")}
    standing = store.standing("vecadd", "H100", [people[0], people[3]], 3)
    assert [row.person_id for row in standing] == [people[7], people[6], people[5], people[3], people[0]]
    assert all(row == everyone[row.person_id] for row in standing)
    assert store.rank_of("vecadd", "H100", people[0]) == everyone[people[0]]


def test_a_page_of_the_ranking_is_its_rows_with_their_overall_ranks(store: Store, build: Builder) -> None:
    people = [build.person(f"P{i}") for i in range(7)]
    for person, score in zip(people, range(1, 8), strict=True):
        build.submit(person, float(score))
    everyone = store.ranking("vecadd", "H100")
    assert store.ranking("vecadd", "H100", 3, offset=3) == everyone[3:6]
    assert [row.rank for row in store.ranking("vecadd", "H100", 3, offset=6)] == [7]
    assert store.ranking("vecadd", "H100", 3, offset=9) == []
