"""Writes: leaderboards, people, submissions and results, each idempotent and all-or-nothing per batch."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from storage_testkit import T0, Builder, eval_result, raw_rows

from harness.result import Status
from storage import Store
from storage.records import Leaderboard, ResultRecord, WriteBatch


def test_upsert_updates_a_leaderboard_but_never_rotates_its_seed(store: Store) -> None:
    created_at = store.get_leaderboard("vecadd").created_at
    deadline = datetime(2026, 4, 1, 18, 0, tzinfo=UTC)
    store.upsert_leaderboard(
        Leaderboard(
            name="vecadd",
            description="new text",
            problem={"name": "vecadd", "v": 2},
            problem_sha="cd" * 32,
            gpus=["H100"],
            ranking_by="geom",
            secret_seed=12345,
            deadline=deadline,
        )
    )
    lb = store.get_leaderboard("vecadd")
    assert (lb.description, lb.problem, lb.gpus, lb.deadline) == (
        "new text",
        {"name": "vecadd", "v": 2},
        ["H100"],
        deadline,
    )
    assert lb.secret_seed == 99
    assert lb.created_at == created_at
    assert store.get_leaderboard("nope") is None


def test_person_is_created_once_per_identity_and_keeps_the_latest_name(store: Store) -> None:
    ann = store.person("discord", "42", "ann")
    assert store.person("discord", "42", "Ann B.") == ann
    assert store.person("discord", "42", "") == ann  # no name given: the stored one stays
    assert store.person("slack", "42", "ann") != ann  # another platform is another identity
    store.close()
    assert raw_rows(store.path, f"SELECT display_name FROM people WHERE id = {ann}") == [("Ann B.",)]
    assert raw_rows(store.path, "SELECT display_name FROM identities WHERE platform = 'discord'") == [("Ann B.",)]


def test_add_submissions_stores_a_batch_and_its_queued_runs(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    items = [build.new(ann, gpus=("H100", "T4")), build.new(bob)]
    stored = store.add_submissions(items)
    assert [s.command_id for s in stored] == [i.command_id for i in items]
    assert all(s.created for s in stored)
    assert stored[0].id < stored[1].id
    assert stored[0].runs == [("run-0-H100", "H100"), ("run-0-T4", "T4")]
    run = store.run("run-0-T4")
    assert (run.state, run.status, run.gpu, run.person_id, run.display_name, run.submission_id) == (
        "queued",
        None,
        "T4",
        ann,
        "Ann",
        stored[0].id,
    )
    assert run.reply_to == items[0].reply_to
    assert run.created_at == items[0].created_at


def test_add_submissions_is_idempotent_on_the_command_id(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    item = build.new(ann, gpus=("T4", "H100"))
    (first,) = store.add_submissions([item])
    again, twin = store.add_submissions([item, item])
    assert (again.created, twin.created) == (False, False)
    assert (again.id, twin.id) == (first.id, first.id)
    assert sorted(again.runs) == sorted(first.runs)
    fresh = build.new(ann)
    new, repeat = store.add_submissions([fresh, fresh])  # the same command twice in one batch
    assert (new.created, repeat.created, repeat.id) == (True, False, new.id)
    store.close()
    assert raw_rows(store.path, "SELECT count(*) FROM submissions") == [(2,)]
    assert raw_rows(store.path, "SELECT count(*) FROM runs") == [(3,)]


def test_identical_code_is_stored_once(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    source = "def custom_kernel(data):\n    return data[0] + data[1]\n"
    a, b = store.add_submissions([build.new(ann, source=source), build.new(bob, source=source)])
    (c,) = store.add_submissions([build.new(ann, source=source)])
    assert a.code_sha == b.code_sha == c.code_sha
    assert store.submission_detail(c.id).source == source
    store.close()
    assert raw_rows(store.path, "SELECT count(*), sum(bytes) FROM code_blobs") == [(1, len(source.encode()))]


def test_a_failing_batch_stores_nothing(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    (first,) = store.add_submissions([build.new(ann)])
    clash = replace(build.new(ann), runs=[(first.runs[0][0], "H100")])  # a run id that is taken
    with pytest.raises(duckdb.ConstraintException):
        store.add_submissions([build.new(ann, source="print('lost')"), clash])
    assert store.stats().submissions == 1
    store.close()
    assert raw_rows(store.path, "SELECT count(*) FROM code_blobs") == [(1,)]


def test_record_results_is_idempotent_on_the_run_id(store: Store, build: Builder, caplog) -> None:
    ann = build.person("Ann")
    (sub,) = store.add_submissions([build.new(ann, gpus=("H100", "T4"))])
    h100, t4 = (run_id for run_id, _ in sub.runs)
    assert store.record_results([build.result(h100, 7.5), build.result(h100, 1.0)]) == [True, False]
    assert store.record_results([build.result(h100, 1.0), build.result(t4, 8.0, Status.FAILED)]) == [False, True]
    with caplog.at_level(logging.WARNING, logger="storage"):
        assert store.record_results([build.result("no-such-run")]) == [False]
    assert "no-such-run" in caplog.text
    run = store.run(h100)
    assert (run.state, run.status, run.score_us) == ("done", "passed", 7.5)
    assert store.run(t4).status == "failed"
    store.close()
    assert raw_rows(store.path, "SELECT run_id, count(*) FROM shape_results GROUP BY ALL ORDER BY 1") == [
        (h100, 2),
        (t4, 2),
    ]
    assert raw_rows(store.path, f"SELECT worker, attempts, gpu_s FROM runs WHERE run_id = '{h100}'") == [
        ("w1", 1, 1.25)
    ]


def test_shape_rows_hold_the_per_shape_figures(store: Store, build: Builder, db_path: Path) -> None:
    sub = build.submit(build.person("Ann"), 9.0)
    store.close()
    rows = raw_rows(
        db_path,
        "SELECT shape_index, spec->>'size', n, median_us, ci_low_us, p90_us, achieved_gbps, "
        "peak_fraction FROM shape_results ORDER BY shape_index",
    )
    assert rows == [(0, "1024", 100, 9.0, 8.9, 9.9, 900.0, 0.3), (1, "2048", 100, 10.0, 8.9, 9.9, 900.0, 0.3)]
    assert sub.runs


def test_a_non_finite_score_is_stored_as_null_and_never_ranks(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    (sub,) = store.add_submissions([build.new(ann)])
    result = eval_result(score_us=10.0)
    result.score_us = float("nan")
    result.shapes[0].median_us = float("inf")
    assert store.record_results([ResultRecord(sub.runs[0][0], result, "w1", 1, T0)]) == [True]
    assert store.run(sub.runs[0][0]).score_us is None
    assert store.ranking("vecadd", "H100") == []
    detail = store.submission_detail(sub.id)
    assert detail.runs[0].result["shapes"][0]["median_us"] is None


def test_runs_move_from_queued_to_running_to_done(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    (sub,) = store.add_submissions([build.new(ann, gpus=("H100", "T4"))])
    h100, t4 = (run_id for run_id, _ in sub.runs)
    assert [r.run_id for r in store.unfinished_runs()] == [h100, t4]
    store.mark_running(h100, "worker-a")
    assert store.run(h100).state == "running"
    store.record_results([build.result(h100)])
    store.mark_running(h100, "late-duplicate")  # a redelivered job must not reopen a finished run
    assert store.run(h100).state == "done"
    assert [(r.run_id, r.state) for r in store.unfinished_runs()] == [(t4, "queued")]
    store.mark_running_many([(t4, "worker-b"), ("no-such-run", "worker-b")])
    assert [(r.run_id, r.state) for r in store.unfinished_runs()] == [(t4, "running")]


def test_a_running_mark_and_the_result_of_the_same_run_in_one_round_leave_it_done(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    (sub,) = store.add_submissions([build.new(ann, gpus=("H100", "T4"))])
    h100, t4 = (run_id for run_id, _ in sub.runs)
    stored = store.write(WriteBatch(running=[(h100, "w1"), (t4, "w2")], results=[build.result(h100)]))
    assert stored.stored == [True]
    assert (store.run(h100).state, store.run(h100).score_us) == ("done", 10.0)
    assert [(r.run_id, r.state) for r in store.unfinished_runs()] == [(t4, "running")]


def test_a_run_whose_person_row_is_missing_is_still_recovered(store: Store, build: Builder) -> None:
    (sub,) = store.add_submissions([build.new(person_id=12345)])
    assert [(r.run_id, r.display_name) for r in store.unfinished_runs()] == [(sub.runs[0][0], "")]
    assert store.submission_detail(sub.id).display_name == ""


def test_count_submissions_since_counts_one_person_in_the_window(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    store.add_submissions(
        [build.new(ann, at=T0 + timedelta(minutes=m)) for m in (0, 10, 20)]
        + [build.new(bob, at=T0 + timedelta(minutes=15))]
    )
    assert store.count_submissions_since(ann, T0 + timedelta(minutes=10)) == 2
    assert store.count_submissions_since(ann, (T0 + timedelta(minutes=21)).replace(tzinfo=None)) == 0
    assert store.count_submissions_since(bob, T0) == 1


def test_audit_rows_are_kept(store: Store, db_path: Path) -> None:
    store.audit("admin:ann", "leaderboard.deadline", {"leaderboard": "vecadd", "at": T0})
    store.close()
    assert raw_rows(db_path, "SELECT actor, action, detail->>'at' FROM audit_log") == [
        ("admin:ann", "leaderboard.deadline", str(T0))
    ]


def test_submission_numbers_follow_each_other_in_order_and_a_repeated_command_takes_none(
    store: Store, build: Builder
) -> None:
    ann = build.person("Ann")
    first, second, third = store.add_submissions([build.new(ann), build.new(ann), build.new(ann)])
    assert (first.id, second.id, third.id) == (first.id, first.id + 1, first.id + 2)
    again, fourth = store.add_submissions([replace(build.new(ann), command_id=second.command_id), build.new(ann)])
    assert (again.id, again.created) == (second.id, False)
    assert fourth.id == third.id + 1  # no number spent on the repeated command
    (fifth,) = store.add_submissions([build.new(ann)])
    assert fifth.id == fourth.id + 1
