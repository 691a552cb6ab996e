"""Profile one evaluation's worker side in this process, without the fork: where do its seconds go?

    python bench/profile_evaluation.py problems/vectoradd problems/vectoradd/solutions/correct/pytorch.py \
        [--mode ranked] [--device cpu] [--sort cumulative] [--rows 40]

Runs ``harness.judge.judge_process.run`` (device, reference, submission import, the mode's loop) under cProfile in a
staged directory, prints the phases the result would report and the top functions. The sandbox is not
entered, so use it on trusted code only (shipped solutions).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness import EvalJob, Mode, load_problem  # noqa: E402
from harness.channel import Outbox, RecordReader  # noqa: E402
from harness.isolation.staging import Stage  # noqa: E402
from harness.judge.judge_process import run  # noqa: E402
from harness.limits import job_cpus  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("solution", type=Path)
    parser.add_argument("--mode", default="ranked", choices=[m.value for m in Mode])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--sort", default="cumulative", help="a pstats sort key: cumulative, tottime, ...")
    parser.add_argument("--rows", type=int, default=40)
    args = parser.parse_args()
    problem = load_problem(args.problem)
    source = args.solution.read_text()
    job = EvalJob(
        problem=problem,
        submission_name=problem.submission_name,
        submission_source=source,
        mode=Mode(args.mode),
        device=args.device,
        secret_seed=20261121,
    )
    stage = Stage.create(problem, source)
    records: list[dict] = []
    read_fd, write_fd = os.pipe()
    drain = threading.Thread(target=_drain, args=(read_fd, records), daemon=True)
    drain.start()
    os.chdir(stage.workdir)
    sys.path.insert(0, str(stage.workdir))
    profiler = cProfile.Profile()
    started = time.perf_counter()
    try:
        profiler.runcall(run, job, stage, Outbox(write_fd, "profile"), job_cpus())
    finally:
        os.close(write_fd)
        drain.join()
        stage.remove()
    print(f"wall {time.perf_counter() - started:.2f} s (under cProfile, which slows Python code down)")
    for record in records:
        if record["t"] == "failure":
            print("failure:", record["failure"]["message"])
        elif record["t"] == "shape":
            print(f"shape {record['spec']}: {len(record['samples_us'])} samples, stopped on {record['stop_reason']}")
        elif record["t"] == "accounting":
            print("phases:", {name: round(seconds, 3) for name, seconds in record["phases_s"].items()})
    pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.rows)
    return 0


def _drain(fd: int, records: list[dict]) -> None:
    reader = RecordReader()
    while chunk := os.read(fd, 1 << 16):
        records.extend(reader.feed(chunk))
    os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
