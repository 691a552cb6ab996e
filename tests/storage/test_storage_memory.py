"""What the store keeps in memory (challenges, rounds, reference times: it is their only writer) follows every write
at once, as a reopened store reads it from the file; and ``ranking_page`` reads a page and its asker's entry in one
query, the rows ``ranking`` and ``standing`` give."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from storage_testkit import T0, Builder

from storage import Store
from storage.records import Challenge


def remembered(store: Store) -> tuple:
    return (
        store.challenges.listed(),
        store.challenges.round_starts("vecadd"),
        store.references.of("vecadd", 1),
        store.references.of("vecadd", 2),
    )


def test_the_copies_in_memory_follow_every_write_and_match_the_file(store: Store, db_path: Path) -> None:
    close = T0 + timedelta(days=1)
    assert remembered(store) == ([], [], {}, {})
    sprint = store.challenges.add(Challenge("Sprint", ["vecadd"], T0, close), T0)
    assert [c.title for c in store.challenges.listed()] == ["Sprint"]
    store.challenges.update(dataclasses.replace(sprint, results={"boards": []}))
    assert store.challenges.listed()[0].results == {"boards": []}
    store.challenges.started(sprint.id, "close", close)
    store.challenges.done(sprint.id, "close", close)
    assert store.challenges.listed()[0].done == {"close"}
    store.challenges.start_round("vecadd", close + timedelta(hours=1), close)
    assert store.challenges.round_starts("vecadd") == [close + timedelta(hours=1)]
    store.references.record("vecadd", 1, "H100", 12.5, "ref-1", T0)
    store.references.record("vecadd", 1, "T4", 40.0, "ref-2", T0)
    store.references.record("vecadd", 1, "H100", 12.0, "ref-3", T0)  # timed again: replaces
    assert store.references.of("vecadd", 1) == {"H100": 12.0, "T4": 40.0}
    store.challenges.listed().clear()  # a caller's list is its own
    kept = remembered(store)
    store.close()
    with Store(db_path) as reopened:
        assert remembered(reopened) == kept
        reopened.delete_leaderboard("vecadd", T0, purge=True)
        assert reopened.challenges.round_starts("vecadd") == []  # erased with the leaderboard


def test_a_failed_write_leaves_the_copy_as_the_file_is(store: Store) -> None:
    sprint = store.challenges.add(Challenge("Sprint", ["vecadd"], T0, T0 + timedelta(days=1)), T0)
    store._con.execute("DROP TABLE rounds")  # every write of challenges now fails, inside its transaction
    with pytest.raises(duckdb.Error):
        store.challenges.update(dataclasses.replace(sprint, title="Renamed"))
    assert [c.title for c in store.challenges.listed()] == ["Sprint"]


def test_a_page_and_its_askers_entry_come_in_one_read(store: Store, build: Builder) -> None:
    people = [build.person(f"P{i}") for i in range(7)]
    for i, person in enumerate(people):
        build.submit(person, 10.0 + i, at=T0 + timedelta(minutes=i))
    last = people[-1]
    for limit, offset, asker in [(3, 0, last), (3, 3, people[0]), (3, 3, people[4]), (3, 6, 0), (3, 9, last)]:
        both = store.ranking("vecadd", "H100", limit, offset=offset) + (
            [r for r in store.standing("vecadd", "H100", [asker], 0) if not offset < r.rank <= offset + limit]
            if asker
            else []
        )
        assert store.ranking_page("vecadd", "H100", limit, offset, None, asker) == sorted(both, key=lambda r: r.rank)
    window = (T0 + timedelta(minutes=2), None)  # a round's: its ranks count only its submissions
    assert [r.rank for r in store.ranking_page("vecadd", "H100", 2, 0, window, last)] == [1, 2, 5]
