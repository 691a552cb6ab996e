"""Repeat ranked matmul evaluations in fresh processes and show each one's per-shape medians.

    python3 bench/matmul_noise.py [RUNS]

Looks for whole processes that run a shape slower than others (between-process noise), the effect
behind the one matmul miss recorded in docs/benchmarks.md.
"""

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness import EvalJob, HarnessServer, Mode, load_problem  # noqa: E402

PROBLEM = REPO / "problems" / "matmul"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    problem = load_problem(PROBLEM)
    source = (PROBLEM / "solutions" / "correct" / "pytorch.py").read_text()
    scores = []
    with HarnessServer() as server:
        for index in range(1, runs + 1):
            started = time.perf_counter()
            result = server.evaluate(
                EvalJob(
                    problem=problem,
                    submission_name="pytorch.py",
                    submission_source=source,
                    mode=Mode.RANKED,
                    device="cuda",
                    secret_seed=20261121,
                )
            )
            wall = time.perf_counter() - started
            medians = " ".join(f"{s.median_us:8.2f}" for s in result.shapes)
            print(
                f"run {index:2d}  {result.status.value}  score {result.score_us or 0:8.2f} us  wall {wall:5.2f} s"
                f"  medians {medians}",
                flush=True,
            )
            if result.score_us:
                scores.append(result.score_us)
    if len(scores) > 1:
        print(
            f"CV {100 * statistics.stdev(scores) / statistics.mean(scores):.2f} %  "
            f"max/min {max(scores) / min(scores):.3f}"
        )


if __name__ == "__main__":
    main()
