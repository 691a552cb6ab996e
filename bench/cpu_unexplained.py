"""Unexplained time per call of honest CPU solutions: what the judge's CPU slack must cover (issue 25).

Evaluates the catalogue's honest CPU solutions and every shipped problem's ``pytorch.py`` in ranked mode on the CPU,
through one warm ``HarnessServer`` with the harness log at DEBUG, and prints each timed shape's "unexplained time
per call" (the judge's line, ``harness.judge.brackets``) beside the shape's reported median, then the spread and the
slack. Every evaluation must pass unflagged; one that does not is printed, and the exit status is 1.

    python bench/cpu_unexplained.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "integrity")]
os.environ["KERNELRANK_HARNESS_LOG"] = "DEBUG"  # read by the harness server when it starts

from cases import HONEST, PASSED, Case  # noqa: E402

from harness import HarnessServer, Problem, Status, load_problem  # noqa: E402
from harness.judge.brackets import SLACK  # noqa: E402

LINE = re.compile(r"unexplained time per call: (-?[\d.]+) us \(median reported ([\d.]+) us")


def honest_cases() -> list[Case]:
    shipped = [
        Case(
            f"problems/{folder.name}/solutions/correct/pytorch.py", "honest", "shipped", (PASSED,), problem=folder.name
        )
        for folder in sorted((REPO / "problems").iterdir())
        if (folder / "solutions" / "correct" / "pytorch.py").is_file() and "cpu" in (folder / "task.yml").read_text()
    ]
    return [c for c in HONEST if not c.cuda and not c.slow] + shipped


def shipped_problems() -> dict[str, Problem]:
    return {
        folder.name: load_problem(folder) for folder in (REPO / "problems").iterdir() if (folder / "task.yml").is_file()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="evaluations of each solution (default 1)")
    args = parser.parse_args()
    found: list[float] = []
    failed = 0
    problems = shipped_problems()
    with HarnessServer() as server:
        print(f"sandbox: {server.sandbox}", flush=True)
        for case in honest_cases():
            for _ in range(args.runs):
                result = server.evaluate(case.job(problems if case.problem in problems else None))
                shapes = [(float(e), float(r)) for e, r in LINE.findall(result.stderr)]
                found += [e for e, _ in shapes]
                verdict = case.judge(result)
                failed += verdict is not None or result.status is not Status.PASSED
                figures = "  ".join(f"{e:7.1f} / {r:7.1f}" for e, r in shapes)
                print(f"{case.name:18.18} {case.problem:10.10} {verdict or 'passed':12.12} {figures}", flush=True)
    slack_us, share = SLACK["cpu"]
    if found:
        print(
            f"\n{len(found)} shapes: unexplained {min(found):.0f} to {max(found):.0f} us per call "
            f"(slack max({slack_us:.0f} us, {share:.0%} of the median)); {failed} evaluations not passed"
        )
    return 1 if failed or not found else 0


if __name__ == "__main__":
    sys.exit(main())
