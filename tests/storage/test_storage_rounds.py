"""A leaderboard's rounds: a round's ranking counts only its submissions, and an older file gets the rounds its
crowned closes started."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

from storage_testkit import T0, Builder, raw_rows

from storage import Store
from storage._schema import MIGRATIONS
from storage.records import Challenge


def ranked(store: Store, window=None) -> list[tuple[str, float]]:
    return [(row.display_name, row.score_us) for row in store.ranking("vecadd", "H100", window=window)]


def test_a_rounds_ranking_counts_only_the_submissions_sent_in_it(store: Store, build: Builder) -> None:
    ann, bob, cy = build.person("Ann"), build.person("Bob"), build.person("Cy")
    start = T0 + timedelta(hours=1)
    build.submit(ann, 10.0, at=T0)
    build.submit(bob, 12.0, at=T0 + timedelta(minutes=1))
    build.submit(ann, 15.0, at=start)  # the new round's first second counts in it
    build.submit(cy, 11.0, at=start + timedelta(minutes=1))
    build.submit(ann, 14.0, at=start + timedelta(minutes=2))

    assert ranked(store) == [("Ann", 10.0), ("Cy", 11.0), ("Bob", 12.0)]  # all time: each one's best ever
    assert ranked(store, (None, start)) == [("Ann", 10.0), ("Bob", 12.0)]
    assert ranked(store, (start, None)) == [("Cy", 11.0), ("Ann", 14.0)]
    assert store.ranking("vecadd", "T4", window=(start, None)) == []


def test_start_round_moves_a_round_not_begun_and_keeps_the_past_ones(store: Store) -> None:
    close, later = T0 + timedelta(days=1), T0 + timedelta(days=3)
    store.challenges.start_round("vecadd", T0, T0 - timedelta(days=1))
    store.challenges.start_round("vecadd", close + timedelta(hours=1), close)  # reopened after the close
    store.challenges.start_round("vecadd", later, close)  # then a challenge opening later: the same round, moved
    assert store.challenges.round_starts("vecadd") == [T0, later]
    assert store.challenges.round_starts("other") == []


def test_an_older_file_gets_the_rounds_of_its_reopened_crowned_leaderboards(store: Store, db_path: Path) -> None:
    close = T0 + timedelta(days=2)
    closed_board = dataclasses.replace(store.get_leaderboard("vecadd"), name="vecmul", deadline=close)
    store.upsert_leaderboard(closed_board)  # crowned, not reopened: its results are still its current round
    crowned = store.challenges.add(Challenge("Week 9", ["vecadd", "vecmul"], T0, close), T0)
    store.challenges.done(crowned.id, "close", close)
    cancelled = store.challenges.add(Challenge("Week 8", ["vecadd"], T0, T0 + timedelta(days=1)), T0)
    store.challenges.update(dataclasses.replace(cancelled, cancelled_at=T0))
    store.challenges.done(cancelled.id, "close", T0)
    store._con.execute("DROP TABLE rounds")  # the file as the previous kernelrank left it
    store._con.execute("DELETE FROM schema_migrations WHERE version = ?", [len(MIGRATIONS)])
    store.close()

    with Store(db_path) as reopened:
        assert reopened.challenges.round_starts("vecadd") == [close]  # vecadd has no deadline: reopened
        assert reopened.challenges.round_starts("vecmul") == []
    assert raw_rows(db_path, "SELECT max(version) FROM schema_migrations") == [(len(MIGRATIONS),)]
