"""History, best over time, submission detail, leaderboard list and global stats."""

from __future__ import annotations

from datetime import timedelta

from storage_testkit import T0, Builder

from harness.result import Status
from storage import Store
from storage.records import Leaderboard


def test_history_lists_a_persons_runs_newest_first(store: Store, build: Builder) -> None:
    ann, bob = build.person("Ann"), build.person("Bob")
    old = build.submit(ann, 9.0, gpus=("H100", "T4"))
    failed = build.submit(ann, None, Status.FAILED, mode="test")
    (queued,) = store.add_submissions([build.new(ann)])
    build.submit(bob, 1.0)
    rows = store.history("vecadd", ann)
    assert [(r.submission_id, r.gpu, r.mode, r.status, r.score_us) for r in rows] == [
        (queued.id, "H100", "ranked", None, None),
        (failed.id, "H100", "test", "failed", None),
        (old.id, "H100", "ranked", "passed", 9.0),
        (old.id, "T4", "ranked", "passed", 9.0),
    ]
    assert rows[0].created_at == queued.created_at and rows[0].file_name == "submission.py"
    assert [r.gpu for r in store.history("vecadd", ann, gpu="T4")] == ["T4"]
    assert len(store.history("vecadd", ann, limit=2)) == 2
    assert store.history("other-board", ann) == []


def test_best_over_time_is_the_running_minimum_of_ranked_passes(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    times = [T0 + timedelta(hours=h) for h in range(5)]
    build.submit(ann, 10.0, at=times[0])
    build.submit(ann, 12.0, at=times[1])
    build.submit(ann, 7.0, at=times[2])
    build.submit(ann, 1.0, at=times[3], mode="benchmark")  # not ranked: not on the curve
    build.submit(ann, None, Status.FAILED, at=times[4])
    build.submit(ann, 2.0, gpus=("T4",), at=times[4])  # another GPU
    assert store.best_over_time("vecadd", ann, "H100") == [(times[0], 10.0), (times[2], 7.0)]
    assert store.best_over_time("vecadd", ann, "T4") == [(times[4], 2.0)]


def test_submission_detail_has_code_person_and_every_run(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    source = "import torch\n\ndef custom_kernel(data):\n    return data[0] + data[1]\n"
    (sub,) = store.add_submissions([build.new(ann, gpus=("H100", "T4"), source=source)])
    h100, t4 = (run_id for run_id, _ in sub.runs)
    store.record_results([build.result(h100, 6.5)])
    detail = store.submission_detail(sub.id)
    assert (detail.id, detail.command_id, detail.display_name, detail.leaderboard, detail.mode, detail.source) == (
        sub.id,
        sub.command_id,
        "Ann",
        "vecadd",
        "ranked",
        source,
    )
    assert detail.reply_to["channel"] == "c"
    done, waiting = detail.runs
    assert (done.info.run_id, done.info.state, done.result["score_us"], done.worker, done.attempts) == (
        h100,
        "done",
        6.5,
        "w1",
        1,
    )
    assert done.result["shapes"][1]["spec"] == {"size": 2048}
    assert done.finished_at == T0 + timedelta(days=1)
    assert (waiting.info.run_id, waiting.info.state, waiting.result, waiting.finished_at) == (t4, "queued", None, None)
    assert store.submission_detail(sub.id + 1000) is None


def test_list_leaderboards_counts_submissions_and_people(store: Store, build: Builder) -> None:
    store.upsert_leaderboard(
        Leaderboard(
            name="softmax",
            description="row softmax",
            problem={},
            problem_sha="0" * 64,
            gpus=["A100"],
            ranking_by="geom",
            secret_seed=1,
            deadline=T0 + timedelta(days=7),
        )
    )
    ann, bob = build.person("Ann"), build.person("Bob")
    build.submit(ann, 5.0)
    build.submit(ann, 4.0)
    build.submit(bob, 4.0)
    summary = {lb.name: (lb.submissions, lb.people, lb.gpus, lb.deadline) for lb in store.list_leaderboards()}
    assert summary == {"softmax": (0, 0, ["A100"], T0 + timedelta(days=7)), "vecadd": (3, 2, ["H100", "T4"], None)}


def test_stats_count_everything(store: Store, build: Builder) -> None:
    ann = build.person("Ann")
    build.submit(ann, 5.0, gpus=("H100", "T4"))
    build.submit(ann, None, Status.TIMEOUT)
    store.add_submissions([build.new(ann)])
    stats = store.stats()
    assert (stats.people, stats.leaderboards, stats.submissions, stats.runs) == (1, 1, 3, 4)
    assert stats.runs_by_status == {"passed": 2, "timeout": 1, "queued": 1}
    assert stats.gpu_seconds == 3 * 1.25
