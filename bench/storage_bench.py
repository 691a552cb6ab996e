"""Storage benchmark: query latency with a large history, batch write throughput, memory.

    python bench/storage_bench.py [--runs 1000000] [--batch 50] [--queries 200] [--db PATH]

Fills a fresh DuckDB file with ``--runs`` finished runs in bulk SQL (2,000 people x 10 leaderboards x 3 GPUs,
two GPUs per submission, 70 % ranked, about 80 % passed, spread over 180 days), then times the store's own
queries on random leaderboards and writes new submissions and results in batches through ``Store``.
Prints a table; these are figures, not pass/fail checks.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.result import EvalResult, Mode, ShapeStats, Status  # noqa: E402
from storage import Store  # noqa: E402
from storage.records import Leaderboard, NewSubmission, ResultRecord  # noqa: E402

PEOPLE = 2_000
BOARDS = [f"board-{i}" for i in range(10)]
GPUS = ["H100", "A100", "L4"]
DAYS = 180
SOURCES = 20_000  # distinct kernel files; submissions reuse them as people resubmit
START = datetime(2026, 1, 1, tzinfo=UTC)


def bulk_load(path: Path, runs: int) -> None:
    """Create the schema through Store, then fill it with INSERT ... SELECT over range() in SQL."""
    with Store(path) as store:
        for board in BOARDS:
            store.upsert_leaderboard(
                Leaderboard(
                    name=board,
                    description=f"{board} kernels",
                    problem={"name": board},
                    problem_sha="0" * 64,
                    gpus=GPUS,
                    ranking_by="geom",
                    secret_seed=1234,
                )
            )
    submissions = runs // 2
    seconds_apart = DAYS * 86_400 / submissions
    con = duckdb.connect(str(path))
    con.execute("SET GLOBAL TimeZone = 'UTC'")
    con.execute(f"""
        INSERT INTO people (id, display_name, created_at)
        SELECT i, 'person-' || i, TIMESTAMPTZ '{START.isoformat()}' FROM range(1, {PEOPLE + 1}) t(i);
        INSERT INTO identities (platform, user_id, person_id, display_name)
        SELECT 'cli', 'user-' || id, id, display_name FROM people;
        SELECT setval('person_id_seq', {PEOPLE});
        INSERT INTO code_blobs (sha256, source, bytes)
        SELECT sha256('src-' || i), source, strlen(source)
        FROM (SELECT i, 'def custom_kernel(data):  # variant ' || i || repeat(chr(10) || '    pass', 100) AS source
              FROM range({SOURCES}) t(i));
        INSERT INTO submissions (id, command_id, person_id, leaderboard, file_name, code_sha, mode, reply_to,
                                 created_at)
        SELECT i, 'cmd-' || i, 1 + h % {PEOPLE}, 'board-' || h // {PEOPLE} % {len(BOARDS)}, 'submission.py',
               sha256('src-' || h // 1000000 % {SOURCES}),
               CASE WHEN h // 100000 % 10 < 7 THEN 'ranked' WHEN h // 100000 % 10 < 9 THEN 'benchmark'
                    ELSE 'test' END,
               '{{"platform": "cli", "channel": "", "thread": "", "message": ""}}',
               TIMESTAMPTZ '{START.isoformat()}' + to_microseconds((i * {seconds_apart} * 1e6)::BIGINT)
        FROM (SELECT i, hash(i) AS h FROM range(1, {submissions + 1}) t(i));
        SELECT setval('submission_id_seq', {submissions});
    """)
    # Two runs per submission on two different GPUs; a person's scores improve with time, with noise.
    con.execute(f"""
        INSERT INTO runs (run_id, submission_id, gpu, state, status, score_us, result, worker, attempts, gpu_s,
                          created_at, finished_at)
        SELECT 'run-' || s.id || '-' || j, s.id, ({GPUS!r})[1 + (s.id + j) % {len(GPUS)}], 'done',
               c.status,
               CASE WHEN c.status = 'passed' AND s.mode <> 'test'
                    THEN 50 + hash(s.person_id, s.leaderboard) % 500 + (hash(s.id, j) % 1000) / 10.0
                         - 0.1 * date_diff('day', TIMESTAMPTZ '{START.isoformat()}', s.created_at) END,
               '{{"status": "' || c.status || '", "mode": "' || s.mode || '", "problem": "' || s.leaderboard ||
               '", "wall_s": 3.2, "gpu_s": 2.1, "method_version": "2026.11-1", "schema_version": 1}}',
               'bench-worker', 1, 2.1, s.created_at, s.created_at + INTERVAL 5 SECOND
        FROM submissions s, range(2) r(j),
             LATERAL (SELECT CASE WHEN hash(s.id, j, 'st') % 100 < 80 THEN 'passed'
                                  WHEN hash(s.id, j, 'st') % 100 < 92 THEN 'failed'
                                  WHEN hash(s.id, j, 'st') % 100 < 97 THEN 'error' ELSE 'timeout' END AS status) c
    """)
    con.execute("CHECKPOINT")
    con.close()


@dataclass
class Timing:
    wall_ms: list[float]
    cpu_ms: list[float]  # this process's CPU time, DuckDB's threads included: what the call costs on an idle host


def timed(call: Callable[[], object], repeats: int) -> Timing:
    call()  # warm-up
    timing = Timing([], [])
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        timing.wall_ms.append((time.perf_counter() - wall) * 1e3)
        timing.cpu_ms.append((time.process_time() - cpu) * 1e3)
    return timing


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def eval_result(score_us: float) -> EvalResult:
    shapes = [
        ShapeStats(
            spec={"size": 1 << (20 + k)},
            n=200,
            median_us=score_us,
            mean_us=score_us,
            trimmed_mean_us=score_us,
            std_us=0.5,
            ci_low_us=score_us - 1,
            ci_high_us=score_us + 1,
            min_us=score_us - 2,
            p10_us=score_us - 1,
            p90_us=score_us + 1,
            max_us=score_us + 5,
            first_call_us=score_us * 3,
            achieved_gbps=1500.0,
            peak_fraction=0.45,
        )
        for k in range(4)
    ]
    return EvalResult(
        status=Status.PASSED, mode=Mode.RANKED, problem="board-0", shapes=shapes, score_us=score_us, gpu_s=2.0
    )


def write_throughput(store: Store, batch: int, batches: int, tag: str) -> tuple[float, float]:
    """Submissions per wall second and per CPU second for add_submissions + record_results, ``batch`` a call."""
    person_id = store.person("cli", "bench-writer", "Bench Writer")
    result = eval_result(80.0)
    wall, cpu = time.perf_counter(), time.process_time()
    for b in range(batches):
        now = datetime.now(UTC)
        items = [
            NewSubmission(
                command_id=f"{tag}-{b}-{i}",
                person_id=person_id,
                leaderboard="board-0",
                file_name="submission.py",
                source=f"def custom_kernel(data):  # {tag} {b} {i}\n",
                mode="ranked",
                runs=[(f"{tag}-run-{b}-{i}", "H100")],
                reply_to={"platform": "cli"},
                created_at=now,
            )
            for i in range(batch)
        ]
        store.add_submissions(items)
        store.record_results(
            [
                ResultRecord(run_id=item.runs[0][0], result=result, worker="bench", attempts=1, finished_at=now)
                for item in items
            ]
        )
    count = batch * batches
    return count / (time.perf_counter() - wall), count / (time.process_time() - cpu)


def rss_mib() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MiB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000, help="finished runs to load before timing")
    parser.add_argument("--batch", type=int, default=50, help="submissions per add_submissions call")
    parser.add_argument("--queries", type=int, default=200, help="repeats per query kind")
    parser.add_argument("--db", type=Path, help="database file to create (default: a temporary directory)")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "bench.duckdb"
        if path.exists():
            parser.error(f"{path} exists; pass a new file")
        started = time.perf_counter()
        bulk_load(path, args.runs)
        load_s = time.perf_counter() - started

        rng = random.Random(7)
        board = lambda: rng.choice(BOARDS)
        gpu = lambda: rng.choice(GPUS)
        someone = lambda: rng.randint(1, PEOPLE)
        rows: list[tuple[str, Timing]] = []
        with Store(path) as store:
            started = time.perf_counter()
            entries = store.rebuild_rankings()  # the bulk SQL bypassed the store, so derive the entries once
            rebuild_s = time.perf_counter() - started
            stored_runs = store.stats().runs
            n = args.queries
            rows.append(("ranking(board, gpu, limit=10)", timed(lambda: store.ranking(board(), gpu(), 10), n)))
            rows.append(("ranking(board, gpu) all people", timed(lambda: store.ranking(board(), gpu()), n)))
            rows.append(("rank_of(board, gpu, person)", timed(lambda: store.rank_of(board(), gpu(), someone()), n)))
            rows.append(("history(board, person)", timed(lambda: store.history(board(), someone()), n)))
            rows.append(
                (
                    "best_over_time(board, person, gpu)",
                    timed(lambda: store.best_over_time(board(), someone(), gpu()), n),
                )
            )
            rows.append(("cross_gpu(board)", timed(lambda: store.cross_gpu(board()), n)))
            rows.append(
                (
                    "count_submissions_since(1 h)",
                    timed(
                        lambda: store.count_submissions_since(
                            someone(), START + timedelta(days=DAYS) - timedelta(hours=1)
                        ),
                        n,
                    ),
                )
            )
            rows.append(("stats()", timed(store.stats, max(10, n // 10))))
            rss_after_queries = rss_mib()
            writes = [
                (
                    f"write: add_submissions+record_results, {args.batch} a call",
                    write_throughput(store, args.batch, max(1, 4000 // args.batch), "batched"),
                ),
                ("write: the same, 1 a call", write_throughput(store, 1, 300, "single")),
            ]
            rss_end = rss_mib()
        size_mib = path.stat().st_size / 2**20

    print(
        f"storage bench: {stored_runs:,} runs loaded in {load_s:.1f} s, {entries:,} ranking entries rebuilt in "
        f"{rebuild_s:.1f} s; file {size_mib:.0f} MiB"
    )
    print(f"{'query':<38} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'cpu p50':>8}")
    for name, timing in rows:
        print(
            f"{name:<38} {percentile(timing.wall_ms, 0.5):8.1f} {percentile(timing.wall_ms, 0.95):8.1f} "
            f"{statistics.fmean(timing.wall_ms):8.1f} {percentile(timing.cpu_ms, 0.5):8.1f}"
        )
    for name, (per_wall_s, per_cpu_s) in writes:
        print(f"{name:<38} {per_wall_s:8.0f} submissions/s ({per_cpu_s:.0f} per CPU second)")
    print(
        f"host: {os.cpu_count()} cores, 1-min load average {load_before:.1f} at start and "
        f"{os.getloadavg()[0]:.1f} at the end (other work on the host inflates every figure)"
    )
    print(
        f"RSS after queries {rss_after_queries[0]:.0f} MiB, after writes {rss_end[0]:.0f} MiB "
        f"(peak {rss_end[1]:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
