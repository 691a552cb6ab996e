"""The per-leaderboard counts that listing reads (storage/_summaries.py) agree with the history they summarise,
whatever happened to it: new submissions, repeats, links and unlinks, invalidation, hiding, purges, bulk imports,
a file opened anew, and a write that failed."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from storage_testkit import T0, Builder

from storage import Store
from storage.records import Leaderboard

TRUTH = """SELECT l.name, count(s.id), count(DISTINCT s.person_id)
           FROM leaderboards l LEFT JOIN submissions s ON s.leaderboard = l.name
           WHERE l.hidden_at IS NULL GROUP BY ALL ORDER BY l.name"""


def listed(store: Store) -> list[tuple[str, int, int]]:
    return [(lb.name, lb.submissions, lb.people) for lb in store.list_leaderboards()]


def truth(store: Store) -> list[tuple[str, int, int]]:
    with store._reading() as cur:
        return cur.execute(TRUTH).fetchall()


def test_counts_follow_submissions_links_invalidation_and_purges(store: Store, build: Builder) -> None:
    store.save_leaderboard(replace(store.get_leaderboard("vecadd"), name="softmax"), T0)
    ann, bob, cat = build.person("Ann"), build.person("Bob"), build.person("Cat")
    build.submit(ann, 5.0)
    build.submit(ann, 4.0, leaderboard="softmax")
    repeated = build.new(bob)
    store.add_submissions([repeated, repeated])  # one command twice in a batch: stored, and counted, once
    store.add_submissions([repeated])  # and again later
    build.submit(cat, 3.0)
    assert listed(store) == truth(store) == [("softmax", 1, 1), ("vecadd", 3, 3)]

    store.link_people(ann, bob, T0)  # Bob's submission is Ann's now: vecadd has two people
    assert listed(store) == truth(store) == [("softmax", 1, 1), ("vecadd", 3, 2)]
    store.unlink_people(ann, None, None, T0 + timedelta(minutes=1))
    assert listed(store) == truth(store) == [("softmax", 1, 1), ("vecadd", 3, 3)]

    invalid = build.submit(cat, 1.0)
    assert store.admin.invalidate(invalid.id, "copied")  # still a submission in the counts
    assert listed(store) == truth(store) == [("softmax", 1, 1), ("vecadd", 4, 3)]

    store.delete_leaderboard("softmax", T0)  # hidden: not listed, counts kept
    assert listed(store) == truth(store) == [("vecadd", 4, 3)]
    store.delete_leaderboard("softmax", T0, purge=True)
    store.save_leaderboard(replace(store.get_leaderboard("vecadd"), name="softmax"), T0)  # the name, anew
    assert listed(store) == truth(store) == [("softmax", 0, 0), ("vecadd", 4, 3)]


def test_a_bulk_import_is_counted_by_rebuild(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    build.submit(ann, 5.0)
    with store._writing() as cur:  # rows written behind the store's back, as bench/storage_bench.py does
        cur.execute(
            """INSERT INTO submissions (id, command_id, person_id, leaderboard, file_name, code_sha, mode, reply_to,
                                        created_at)
               SELECT 1000 + i, 'bulk-' || i, 100 + i % 3, 'vecadd', 'k.py', '', 'ranked', '{}', now()
               FROM range(30) t(i)"""
        )
    store.rebuild_rankings()
    assert listed(store) == truth(store) == [("vecadd", 31, 4)]


def test_the_counts_of_a_file_are_made_when_it_opens(db_path: Path) -> None:
    with Store(db_path) as store:
        store.save_leaderboard(Leaderboard("old", "", {}, "", ["H100"], "geom", secret_seed=1), T0)
        build = Builder(store, leaderboard="old")
        for name in ("Ann", "Bob", "Ann"):
            build.submit(build.person(name), 3.0)
    with Store(db_path) as store:
        assert listed(store) == truth(store) == [("old", 3, 2)]


def test_a_failed_write_leaves_the_counts_to_be_made_again(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    build.submit(ann, 3.0)
    with pytest.raises(duckdb.Error), store._changing_submissions() as cur:
        store._counts.add([("vecadd", ann)])  # counted, then the write fails
        cur.execute("SELECT * FROM no_such_table")
    assert listed(store) == truth(store) == [("vecadd", 1, 1)]
