"""A person's progress: the points where their best changed and their latest run, at most MAX_POINTS a series,
all series in one read; and ranks on their page agree with the rankings."""

from __future__ import annotations

from datetime import timedelta

from storage_testkit import T0, Builder

from storage import Store
from storage._progress import MAX_POINTS


def test_only_new_bests_and_the_latest_run_are_points(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    times = [T0 + timedelta(hours=h) for h in range(4)]
    for at, score in zip(times, (10.0, 12.0, 7.0, 9.0), strict=True):
        build.submit(ann, score, at=at)
    assert store.best_over_time("vecadd", ann, "H100") == [(times[0], 10.0), (times[2], 7.0), (times[3], 7.0)]
    series = store.person_summary(ann).progress[("vecadd", "H100")]
    assert series.runs == 4 and series.points == store.best_over_time("vecadd", ann, "H100")


def test_a_long_history_is_thinned_keeping_its_first_and_last_points(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    count = 3 * MAX_POINTS
    store.add_submissions([build.new(ann, at=T0 + timedelta(minutes=i)) for i in range(count)])
    with store._writing("outcomes") as cur:  # every run a new best, written in one go
        cur.execute("UPDATE runs SET state = 'done', status = 'passed', score_us = 1000 - submission_id")
    store.rebuild_rankings()
    series = store.person_summary(ann).progress[("vecadd", "H100")]
    assert series.runs == count and len(series.points) == MAX_POINTS
    assert series.points[0] == (T0, 1000.0 - 1) and series.points[-1][0] == T0 + timedelta(minutes=count - 1)
    assert [b for _, b in series.points] == sorted((b for _, b in series.points), reverse=True)


def test_ranks_on_a_page_are_the_rankings_ranks(store: Store, build: Builder) -> None:
    people = [build.person(name) for name in ("Ann", "Bob", "Cat", "Dan")]
    for person, score in zip(people, (5.0, 3.0, 5.0, 1.0), strict=True):  # Ann and Cat tie: Ann came first
        build.submit(person, score, gpus=("H100", "T4"))
    ranking = {row.person_id: row.rank for row in store.ranking("vecadd", "H100")}
    for person in people:
        (h100, t4) = store.person_summary(person).bests
        assert h100.rank == t4.rank == ranking[person]
