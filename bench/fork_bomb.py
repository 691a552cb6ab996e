"""How fast a fork bomb is stopped, and whether the host stays responsive meanwhile.

    .venv/bin/python bench/fork_bomb.py [--runs 3] [--cgroups on|off]

A harness server of its own (a subprocess set up as ``harness.host.server_process.serve`` sets itself up: a child
subreaper at nice -10, the probed sandbox, a zygote) runs ``--runs`` times a submission that writes the wall
clock to its stdout and then forks without end (tests/integrity/hostile/fork_bomb.py with a time stamp). Per
run it prints, in seconds after the bomb's first fork: when the supervisor's watch decided to stop the job (its
first ``_stop``), and when the evaluation was over (every process of the job killed and reaped); the failure kind
and message; and the longest a process at nice 0 outside the job overslept a 10 ms sleep during the run (the
host's responsiveness). ``--cgroups off`` runs the same without a cgroup per job (``KERNELRANK_CGROUPS=off``).
``--group-cost N`` instead times what the group of a job that ends cleanly costs the supervisor: make it, move
a process in, wait for it to exit, kill what is left (nothing), read the kernel's counts, remove the group; N
times (median and p90 milliseconds, the fork and the wait included).

Prints one line per run; figures go to docs/benchmarks.md by hand, with this command.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BOMB = """import os
import sys
import time


def custom_kernel(data):
    print(f"first fork at {time.time()!r}", flush=True)
    while True:
        os.fork()
"""
# sleeps 10 ms at a time; on each line of stdin, prints the longest oversleep (ms) since the last one
PROBE = """import sys, threading, time
worst = 0.0
def sleep():
    global worst
    while True:
        start = time.monotonic()
        time.sleep(0.01)
        worst = max(worst, (time.monotonic() - start - 0.01) * 1000)
threading.Thread(target=sleep, daemon=True).start()
for _ in sys.stdin:
    print(round(worst, 1), flush=True)
    worst = 0.0
"""


def serve(runs: int) -> None:
    """The server side: run the bomb ``runs`` times, one JSON line each on stdout."""
    import torch  # noqa: F401 - imported once before the zygote forks, as the server does

    from harness import load_problem
    from harness.host import supervisor, watch
    from harness.host.server_process import SERVER_NICE
    from harness.isolation import linux, sandbox
    from harness.isolation.zygote import Zygote
    from harness.job import EvalJob
    from harness.judge import judge_process
    from harness.result import Failure, Mode

    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    os.setpriority(os.PRIO_PROCESS, 0, SERVER_NICE)
    capability = sandbox.probe()
    zygote = Zygote(judge_process.child_entry)
    stops: list[float] = []
    first_stop = watch.Watch._stop

    def timed_stop(job_watch: watch.Watch, failure: Failure) -> None:
        stops.append(time.time())
        first_stop(job_watch, failure)

    watch.Watch._stop = timed_stop  # type: ignore[method-assign]
    job = EvalJob(
        problem=load_problem(REPO / "tests" / "fixtures" / "harness" / "vectoradd"),
        submission_name="submission.py",
        submission_source=BOMB,
        mode=Mode.TEST,
        device="cpu",
    )
    print(json.dumps({"sandbox": capability.describe()}), flush=True)
    for _ in range(runs):
        stops.clear()
        result = supervisor.run_job(job, capability, zygote)
        ended = time.time()
        forked = float(result.stdout.split("first fork at ", 1)[1].split()[0])
        failure = result.failure
        print(
            json.dumps(
                {
                    "stopped_s": round(stops[0] - forked, 3) if stops else None,
                    "ended_s": round(ended - forked, 3),
                    "kind": failure.kind.value if failure else "passed",
                    "message": failure.message if failure else "",
                    "leftovers": result.sandbox.leftovers if result.sandbox else None,
                }
            ),
            flush=True,
        )
    zygote.close()


def group_cost(times: int) -> None:
    from harness.isolation import cgroups

    hierarchy = cgroups.find()
    if isinstance(hierarchy, str):
        print(f"no cgroup here: {hierarchy}")
        return
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        group = hierarchy.create(512, 1.0)
        ready, go = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.read(ready, 1)  # until it is in the group
            os._exit(0)
        group.enter(pid)
        os.write(go, b"1")
        os.waitpid(pid, 0)
        os.close(ready)
        os.close(go)
        group.kill()
        group.counts()
        group.remove()
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    p90 = spent[int(0.9 * (times - 1))]
    print(f"{hierarchy.describe()}: median {statistics.median(spent):.2f} ms, p90 {p90:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cgroups", choices=("on", "off"), default="on")
    parser.add_argument("--group-cost", type=int, default=0, metavar="N")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.group_cost:
        group_cost(args.group_cost)
        return
    if args.serve:
        serve(args.runs)
        return
    env = {**os.environ, "KERNELRANK_CGROUPS": args.cgroups}
    probe = subprocess.Popen([sys.executable, "-c", PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--runs", str(args.runs)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert server.stdout is not None and probe.stdin is not None and probe.stdout is not None
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    runs = []
    for line in server.stdout:
        record = json.loads(line)
        probe.stdin.write("\n")
        probe.stdin.flush()
        record["host_oversleep_ms"] = float(probe.stdout.readline())
        print(json.dumps(record), flush=True)
        runs += [record] if "ended_s" in record else []
    server.wait()
    probe.stdin.close()
    probe.wait()
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    for name in ("stopped_s", "ended_s", "host_oversleep_ms"):
        print(f"{name}: {', '.join(str(run[name]) for run in runs)}")


if __name__ == "__main__":
    main()
