"""GPU evidence for the integrity suite (issue 12): the cheat catalogue, honest solutions and hostile input,
run through the sandboxed harness on a CUDA machine, in one call of well under 8 minutes.

    python3 bench/integrity_gpu.py              # on a CUDA machine, from the repository root
    python3 bench/integrity_gpu.py --cpu-only   # anywhere: the CPU cases only (what the test suite runs)

It needs no pytest: the cases are the data in ``tests/integrity/cases.py`` (each with what must happen; the
``c24_*`` cases are issue 20's attacks on the judge/runner split: heap-walking forgery, forged timer, patched
comparison operators, an answer before the work is done on a side stream, writes to the judge's link),
and every evaluation goes through one warm ``harness.host.server.HarnessServer``, so each job gets its own
sandbox (or the fallback the server reports). Order: the CUDA cases first (catalogue, honest solutions,
hostile input), then the CPU cases while time is left (the slow CPU torch.compile case is left out).

Prints the sandbox line, one row per case (entry, device, expected, got, ok, seconds) and a summary:
cheats caught out of tried, honest solutions flagged or failing, hostile inputs handled. With ``$OUT`` set
it writes ``$OUT/integrity_gpu.json`` (every result's verdict, findings and sandbox report) and
``$OUT/integrity_gpu.md`` (the table). Exit status: 2 when no CUDA GPU is visible (without --cpu-only),
1 when any case did not end as expected, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "integrity")]  # run from a checkout, no install needed

from cases import CATALOGUE, HONEST, HOSTILE, Case, judge_reads_runner_memory  # noqa: E402

from harness import HarnessServer  # noqa: E402

TIME_BUDGET_S = 420.0  # no case starts after this
SLOW_CPU = {"h05_torch_compile"}


def plan(cpu_only: bool, cuda_only: bool = False) -> list[tuple[str, Case]]:
    groups = [("cheat", CATALOGUE), ("honest", HONEST), ("hostile", HOSTILE)]
    cuda = [] if cpu_only else [(group, c) for group, cases in groups for c in cases if c.cuda]
    cpu = (
        []
        if cuda_only
        else [(group, c) for group, cases in groups for c in cases if not c.cuda and c.name not in SLOW_CPU]
    )
    return cuda + cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-only", action="store_true", help="run only the CPU cases")
    parser.add_argument("--cuda-only", action="store_true", help="run only the CUDA cases (CI runs the CPU ones)")
    args = parser.parse_args()
    if not args.cpu_only:
        import torch

        if not torch.cuda.is_available():
            print("no CUDA GPU is visible; use --cpu-only to run the CPU cases", flush=True)
            return 2
    started = time.monotonic()
    rows, details = [], []
    with HarnessServer() as server:
        print(f"sandbox: {server.sandbox}", flush=True)
        for group, case in plan(args.cpu_only, args.cuda_only):
            if time.monotonic() - started > TIME_BUDGET_S:
                rows.append((group, case, "-", "not run (time budget)", False, 0.0))
                continue
            if case.memory and (why := judge_reads_runner_memory()):
                rows.append((group, case, "not run (the judge cannot read the runner's memory here)", why, True, 0.0))
                continue
            began = time.monotonic()
            try:
                result = server.evaluate(case.job())
                why = case.judge(result)
                got = result.failure.kind.value if result.failure else result.status.value
                details.append({"case": case.name, "entry": case.entry, "cuda": case.cuda, "result": result.to_dict()})
            except Exception as exc:  # a broken case must not hide the others
                why, got = f"{type(exc).__name__}: {exc}", "raised"
            seconds = time.monotonic() - began
            rows.append((group, case, got, why or "", why is None, seconds))
            mark = "ok  " if why is None else "FAIL"
            print(
                f"{mark} {group:7} {case.entry:12.12} {case.name:32.32} {'cuda' if case.cuda else 'cpu':4} "
                f"{got:18.18} {seconds:6.1f} s  {why or ''}",
                flush=True,
            )
    table = _table(rows)
    summary = _summary(rows)
    print("\n" + table + "\n\n" + summary, flush=True)
    if out := os.environ.get("OUT"):
        Path(out, "integrity_gpu.md").write_text(f"sandbox: {server.sandbox}\n\n{table}\n\n{summary}\n")
        Path(out, "integrity_gpu.json").write_text(json.dumps({"sandbox": server.sandbox, "cases": details}))
    return 0 if all(ok for *_, ok, _ in rows) else 1


def _table(rows: list[tuple[str, Case, str, str, bool, float]]) -> str:
    lines = ["| group | entry | case | device | expected | got | ok | s |", "|---|---|---|---|---|---|---|---|"]
    for group, case, got, why, ok, seconds in rows:
        expected = " or ".join(str(e) for e in case.expect)
        lines.append(
            f"| {group} | {case.entry} | {case.name} | {'cuda' if case.cuda else 'cpu'} | {expected} | "
            f"{got} | {'yes' if ok else 'NO: ' + why[:120]} | {seconds:.1f} |"
        )
    return "\n".join(lines)


def _summary(rows: list[tuple[str, Case, str, str, bool, float]]) -> str:
    def count(group: str) -> tuple[int, int]:
        ran = [ok for g, _, got, _, ok, _ in rows if g == group and not got.startswith("not run")]
        return sum(ran), len(ran)

    cheats, honest, hostile = count("cheat"), count("honest"), count("hostile")
    return (
        f"cheats caught (or no gain): {cheats[0]} of {cheats[1]}; honest solutions passing unflagged: "
        f"{honest[0]} of {honest[1]}; hostile inputs handled: {hostile[0]} of {hostile[1]}"
    )


if __name__ == "__main__":
    sys.exit(main())
