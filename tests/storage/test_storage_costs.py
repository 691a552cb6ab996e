"""Run costs: stored with each result, summed per GPU in the stats, and added to databases written before them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb
from storage_testkit import Builder, raw_rows

from storage import Store
from storage._schema import MIGRATIONS, migrate


def test_a_runs_cost_is_stored_with_its_result_and_summed_per_gpu(store: Store, build: Builder, db_path: Path) -> None:
    ada = build.person("Ada")
    (billed,) = store.add_submissions([build.new(ada, gpus=("H100", "T4"))])
    (h100, _), (t4, _) = sorted(billed.runs, key=lambda run: run[1])
    store.record_results([replace(build.result(h100), cost_usd=0.0137), build.result(t4)])  # T4: a local GPU
    (local,) = store.add_submissions([build.new(ada, gpus=("H100",))])
    store.record_results([replace(build.result(local.runs[0][0]), cost_usd=0.0063)])
    store.add_submissions([build.new(ada, gpus=("T4",))])  # still queued: not counted

    figures = store.stats()
    assert round(figures.cost_usd, 6) == 0.02
    by_gpu = {usage.gpu: usage for usage in figures.by_gpu}
    assert (by_gpu["H100"].runs, by_gpu["H100"].gpu_seconds, round(by_gpu["H100"].cost_usd, 6)) == (2, 2.5, 0.02)
    assert (by_gpu["T4"].runs, by_gpu["T4"].cost_usd) == (1, 0.0)
    store.close()
    assert raw_rows(db_path, f"SELECT cost_usd FROM runs WHERE run_id IN ('{h100}', '{t4}') ORDER BY gpu") == [
        (0.0137,),
        (None,),
    ]


def test_a_database_from_before_costs_gains_the_column_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    migrate(con, MIGRATIONS[:1])
    con.execute("""INSERT INTO runs (run_id, submission_id, gpu, state, status, gpu_s, created_at)
                   VALUES ('r1', 1, 'H100', 'done', 'passed', 2.0, now())""")
    con.close()
    with Store(path) as store:
        figures = store.stats()
    assert (figures.runs, figures.gpu_seconds, figures.cost_usd) == (1, 2.0, 0.0)
    assert raw_rows(path, "SELECT run_id, cost_usd FROM runs") == [("r1", None)]
