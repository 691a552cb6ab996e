"""Crash safety and concurrent use from threads, the way the core uses the store."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from storage_testkit import Builder, python_child

from storage import Store

CRASHING_CORE = """
import os, signal, sys
sys.path.insert(0, "tests/storage")
from storage_testkit import Builder
from storage import Store

store = Store({path!r})
build = Builder(store)
ann = build.person("Ann")
subs = store.add_submissions([build.new(ann) for _ in range(20)])
store.record_results([build.result(sub.runs[0][0], 5.0 + i) for i, sub in enumerate(subs[:15])])
print("committed", flush=True)
# Die inside an open write transaction, before any checkpoint: what it wrote must vanish.
cur = store._con.cursor()
cur.begin()
cur.execute("INSERT INTO people (display_name) VALUES ('uncommitted')")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_committed_rows_survive_a_sigkill_and_the_open_transaction_does_not(db_path: Path) -> None:
    child = python_child(CRASHING_CORE.format(path=str(db_path)))
    out, err = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL, err
    assert out.strip() == "committed"
    with Store(db_path) as store:
        stats = store.stats()
        assert (stats.people, stats.submissions) == (1, 20)
        assert stats.runs_by_status == {"passed": 15, "queued": 5}
        assert [row.score_us for row in store.ranking("vecadd", "H100")] == [5.0]
        assert len(store.unfinished_runs()) == 5


def test_reads_run_alongside_a_writer_thread(store: Store, build: Builder) -> None:
    people = [build.person(f"P{i}") for i in range(5)]
    errors: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        try:
            for batch in range(20):
                subs = store.add_submissions([build.new(people[(batch + i) % 5]) for i in range(10)])
                store.record_results([build.result(sub.runs[0][0], 100.0 - batch) for sub in subs])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                rows = store.ranking("vecadd", "H100")
                assert [row.rank for row in rows] == list(range(1, len(rows) + 1))
                store.history("vecadd", people[0])
                store.stats()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert store.stats().submissions == 200
    assert [row.score_us for row in store.ranking("vecadd", "H100")] == [81.0] * 5
