"""Problems that bring their own evaluator: run it as GPU MODE's public runner does, in our sandbox.

When a problem's ``config.main`` evaluator is staged (``Problem.author_evaluator``: its reference.py lacks
the functions kernelrank's harness calls, or its task.yml sets ``evaluator: author``), the supervisor hands
the job here. Each call is ``python eval.py MODE SPEC_FILE`` in a fresh child that enters the same sandbox,
limits and memory/task/flood watch as a submission's worker (``harness.isolation.sandbox``); the evaluator writes
``key: value`` lines to the pipe named by ``POPCORN_FD`` (``harness.popcorn``), read here, outside the job.
Test mode runs ``test`` over the tests; benchmark ``benchmark`` and profile ``profile`` over the benchmarks;
ranked runs ``test`` and, when it passes, ``leaderboard`` with ``POPCORN_SEED`` drawn from the run's secret key.

Trust: the evaluator is the problem's code, but it imports the submission into its own process, so the
figures it reports were measured by the author's method, beside the submission, without kernelrank's timer
or defences. The result says so (``EvalResult.measured_by``).
"""

from __future__ import annotations

import codecs
import os
import selectors
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from harness import popcorn, stats
from harness.device import driver_version, system_info
from harness.failures import describe, failed_result, status_for
from harness.host import precheck
from harness.host.assembly import read_log
from harness.host.breaches import FLOOD_BYTES, written_bytes
from harness.host.watch import DRAIN_S, KILL_WAIT_S, MEMORY_CHECK_S, POLL_S, Caller, Emit
from harness.isolation import cgroups, processes, sandbox
from harness.isolation.staging import Stage, StagingError
from harness.job import EvalJob
from harness.limits import Limits
from harness.liveness import Liveness, Phase, where
from harness.result import EvalResult, Failure, FailureKind, Mode, SandboxInfo, Status
from harness.seeds import SEED_MODULUS, ranked_seed, run_key

KEY_WAIT_S = 10.0  # how long a ranked run's timing waits for its key
HARNESS_MARK = "kernelrank-harness-error"  # the child's own line when the evaluator could not be started
_STAGES = {"test": "testing", "benchmark": "timing", "leaderboard": "timing", "profile": "profiling"}


@dataclass(frozen=True)
class Call:
    mode: str  # the evaluator's mode: test | benchmark | leaderboard | profile
    specs: list[dict[str, Any]]
    phase: Phase

    @property
    def spec_file(self) -> str:
        return f"{self.mode}_specs.txt"


@dataclass
class Outcome:
    call: Call
    report: popcorn.Report = field(default_factory=popcorn.Report)
    exit_status: int | None = None
    stopped_for: Failure | None = None
    stdout: str = ""  # what the call printed (captured outside the job)
    stderr: str = ""


def plan(job: EvalJob) -> list[Call]:
    task = job.problem.task
    benchmarks = task.benchmarks or task.tests
    test = Call("test", task.tests, Phase.of(task, "test"))
    return {
        Mode.TEST: [test],
        Mode.BENCHMARK: [Call("benchmark", benchmarks, Phase.of(task, "benchmark"))],
        Mode.PROFILE: [Call("profile", benchmarks, Phase.of(task, "profile"))],
        Mode.RANKED: [test, Call("leaderboard", benchmarks, Phase.of(task, "ranked"))],
    }[job.mode]


def run_job(
    job: EvalJob, capability: sandbox.Capability, emit: Emit, caller: Caller | None, spare: int | None = None
) -> EvalResult:
    """Evaluate ``job`` with the problem's own evaluator; the same contract as ``supervisor.run_job``. ``spare`` is
    the server's zygote (``harness.isolation.zygote``): below the server too, but no part of the job, so never
    counted or killed."""
    started = time.monotonic()
    gpu = bool(driver_version())
    device = "cuda" if gpu else "cpu"  # the evaluator runs as written: on the GPU when there is one
    if job.device not in ("auto", device) or device not in job.problem.task.devices:
        wanted = device if job.device == "auto" else job.device
        return failed_result(
            job,
            Failure(
                FailureKind.UNSUPPORTED_DEVICE,
                f"The problem {job.problem.name} runs on "
                f"{' and '.join(job.problem.task.devices)} with its own evaluator, and this "
                f"evaluation asked for {wanted} on a machine with "
                f"{'a' if gpu else 'no'} GPU; choose another runner.",
            ),
            started,
        )
    limits = Limits.for_job(job.memory_limit_mb, job.problem.task.timeout_s(job.mode))
    keys = [run_key(job.secret_seed)] if caller is None else []  # a caller sends the ranked key itself
    outcomes: list[Outcome] = []
    group = cgroups.new(capability.cgroups, limits.tasks, limits.cpu_cores)  # every call's processes, one group
    try:
        for call in plan(job):
            if call.mode == "leaderboard" and not keys and caller is not None:
                _await_key(caller, keys)
            if call.mode == "leaderboard" and not keys:
                failure = Failure(FailureKind.HARNESS_ERROR, "The ranked run's key never arrived, so it was not timed.")
                outcomes.append(Outcome(call, stopped_for=failure))
                break
            seed = ranked_seed(keys[0], 0, 0) % SEED_MODULUS if call.mode == "leaderboard" else None
            try:  # a fresh folder per call: the test run's submission must not leave files for the timed run
                stage = Stage.create(job.problem, job.submission_source)
            except (StagingError, OSError) as exc:
                failure = Failure(FailureKind.INVALID_PROBLEM, f"The problem's files cannot be staged: {exc}.")
                return failed_result(job, failure, started)
            try:
                (stage.workdir / call.spec_file).write_text(popcorn.spec_lines(call.specs))
                launch = sandbox.Launch.plan(capability, limits, stage)
                outcomes.append(_Watch(job, launch, call, emit, caller, keys, spare, group).run(seed))
                outcomes[-1].stdout, outcomes[-1].stderr = read_log(stage.stdout_path), read_log(stage.stderr_path)
            finally:
                stage.remove()
            if _failure(outcomes[-1]) is not None:
                break
        result = _result(job, outcomes, time.monotonic() - started, device)
        kernel = group.counts() if group is not None else cgroups.Counts()
        result.sandbox = SandboxInfo(
            isolated=capability.isolated,
            description=capability.describe(),
            memory_limit_mb=limits.memory_mb,
            leftovers=max(group.kill() if group else 0, processes.sweep(os.getpid(), spare=spare)),
            refused_tasks=kernel.refused_tasks,
            throttled_periods=kernel.throttled_periods,
        )
    finally:
        if group is not None:  # a staging failure or an exception included
            group.kill()
            group.remove()
    precheck.hold(result, precheck.check(job.submission_source, job.submission_name))
    return result


@dataclass
class _Watch:
    """One evaluator call: fork, sandbox, exec, then read its lines and hold it to its limits until it ends."""

    job: EvalJob
    launch: sandbox.Launch
    call: Call
    emit: Emit
    caller: Caller | None
    keys: list[str]  # the ranked run's key, once the caller sent it
    spare: int | None = None  # the server's zygote
    group: cgroups.JobGroup | None = None  # the job's cgroup, where the host gives it one

    def run(self, seed: int | None) -> Outcome:
        outcome = Outcome(self.call)
        evaluator = self.job.problem.author_evaluator
        argv = [sys.executable, "-B", str(evaluator), self.call.mode, self.call.spec_file]
        read_fd, write_fd = os.pipe()
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
        out_fd, err_fd = (
            os.open(p, flags, 0o600) for p in (self.launch.stage.stdout_path, self.launch.stage.stderr_path)
        )
        pid = os.fork()
        if pid == 0:
            _child(self.launch, self.group, (write_fd, out_fd, err_fd), argv, seed)
        for fd in (write_fd, out_fd, err_fd):
            os.close(fd)
        try:
            self._watch(pid, read_fd, outcome)
        finally:
            processes.kill(pid)
            os.close(read_fd)
        return outcome

    def _watch(self, pid: int, read_fd: int, outcome: Outcome) -> None:
        os.set_blocking(read_fd, False)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        selector = selectors.DefaultSelector()
        selector.register(read_fd, selectors.EVENT_READ, "evaluator")
        if self.caller is not None:
            selector.register(self.caller.fileno(), selectors.EVENT_READ, "caller")
        liveness = Liveness(self.call.phase, self.emit)
        limit = self.launch.limits
        killed_at: float | None = None
        with processes.MemoryMeter(os.getpid(), limit.memory_mb * 2**20, MEMORY_CHECK_S, spare=self.spare) as meter:
            self.emit({"t": "started", "pid": pid})
            while True:
                for key, _ in selector.select(POLL_S):
                    if key.data == "evaluator" and not self._read(read_fd, decoder, outcome.report, liveness):
                        selector.unregister(read_fd)
                    elif key.data == "caller" and not self._from_caller():
                        selector.unregister(self.caller.fileno())  # type: ignore[union-attr]
                        outcome.stopped_for = outcome.stopped_for or Failure(
                            FailureKind.HARNESS_ERROR, "The evaluation was cancelled: its caller went away."
                        )
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    outcome.exit_status = status
                    break
                processes.reap_children(os.getpid(), keep=pid)
                if outcome.stopped_for is None:
                    outcome.stopped_for = liveness.check() or self._over_limits(meter, outcome.report, liveness)
                if outcome.stopped_for is not None and killed_at is None:
                    killed_at = time.monotonic()
                    processes.kill(pid)
                elif killed_at is not None and time.monotonic() - killed_at > KILL_WAIT_S:
                    break
        if self.caller is not None and self.caller.fileno() in selector.get_map():
            selector.unregister(self.caller.fileno())
        until = time.monotonic() + DRAIN_S  # what it wrote before it ended (a leftover may hold the pipe open)
        while read_fd in selector.get_map() and (left := until - time.monotonic()) > 0:
            if selector.select(left) and not self._read(read_fd, decoder, outcome.report, liveness):
                selector.unregister(read_fd)
        selector.close()

    def _read(self, fd: int, decoder: codecs.IncrementalDecoder, report: popcorn.Report, liveness: Liveness) -> bool:
        """Take what the pipe holds; False at end of file."""
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        before = report.seen("test"), report.seen("benchmark")
        report.feed(decoder.decode(chunk))
        kind = "test" if self.call.mode == "test" else "benchmark"
        if (report.seen("test"), report.seen("benchmark")) != before and report.seen(kind):
            index = report.seen(kind)
            spec = report.spec(kind, index - 1, {})
            progress = {
                "stage": _STAGES[self.call.mode],
                "index": index,
                "total": len(self.call.specs),
                "detail": describe({k: v for k, v in spec.items() if k != "seed"}),
            }
            liveness.saw(progress)
            self.emit({"t": "progress", "progress": progress})
        return True

    def _from_caller(self) -> bool:
        assert self.caller is not None
        records = self.caller.receive()
        if records is None:
            return False
        self.keys.extend(str(r.get("key")) for r in records if r.get("op") == "key" and not self.keys)
        return True

    def _over_limits(self, meter: processes.MemoryMeter, report: popcorn.Report, liveness: Liveness) -> Failure | None:
        limit, doing = self.launch.limits, f"the problem's evaluator was {where(liveness.progress)}"
        usage = processes.usage(os.getpid(), spare=self.spare)
        if usage.tasks >= limit.tasks:
            return Failure(
                FailureKind.RESOURCE_LIMIT,
                f"The evaluation's processes ran {usage.tasks} threads in all, "
                f"reaching the limit of {limit.tasks}, and were stopped while "
                f"{doing}. Do not start processes or threads in a loop.",
            )
        if meter.latest_bytes > limit.memory_mb * 2**20:
            return Failure(
                FailureKind.OUT_OF_MEMORY,
                f"The evaluation used more than {limit.memory_mb} MB of host "
                f"memory and was stopped while {doing}. Allocate less memory.",
            )
        stage = self.launch.stage
        if report.flooded or written_bytes(stage) > FLOOD_BYTES:
            return Failure(
                FailureKind.OUTPUT_FLOOD,
                f"The evaluation wrote more than {FLOOD_BYTES // 2**20} MiB of "
                f"output or {popcorn.MAX_LINES} result lines and was stopped "
                f"while {doing}. Print less: output is capped.",
            )
        return None


def _await_key(caller: Caller, keys: list[str]) -> None:
    """The ranked key, sent by the caller once the first call started (a fast test run may end before it comes)."""
    deadline = time.monotonic() + KEY_WAIT_S
    with selectors.DefaultSelector() as selector:
        selector.register(caller.fileno(), selectors.EVENT_READ)
        while not keys and (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            records = caller.receive()
            if records is None:  # the caller is gone
                return
            keys.extend(str(r.get("key")) for r in records if r.get("op") == "key" and not keys)


def _child(
    launch: sandbox.Launch, group: cgroups.JobGroup | None, fds: tuple[int, int, int], argv: list[str], seed: int | None
) -> None:
    """The forked child: join the job's cgroup, enter the sandbox, then become the evaluator (never returns)."""
    fd, out_fd, err_fd = fds
    try:
        if group is not None:  # first: everything the evaluator starts is then born in the group
            group.enter(os.getpid())
        sandbox.enter(launch, fd, out_fd, err_fd)
        os.set_inheritable(fd, True)
        env = dict(os.environ, POPCORN_FD=str(fd))
        if seed is not None:
            env["POPCORN_SEED"] = str(seed)
        os.execve(argv[0], argv, env)
    except BaseException as exc:  # nothing may return into the server's code
        try:
            os.write(fd, f"{HARNESS_MARK}: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(70)


def _result(job: EvalJob, outcomes: list[Outcome], wall_s: float, device: str) -> EvalResult:
    task = job.problem.task
    result = EvalResult(
        status=Status.PASSED,
        mode=job.mode,
        problem=job.problem.name,
        ranking_by=task.ranking_by,
        stdout="".join(o.stdout for o in outcomes),
        stderr="".join(o.stderr for o in outcomes),
        wall_s=wall_s,
        measured_by=popcorn.MEASURED_BY,
        system=system_info("cpu"),
    )
    result.system.device = device
    result.system.driver = driver_version()
    failure = None
    for outcome in outcomes:
        report, call = outcome.report, outcome.call
        if call.mode == "test":
            result.tests += popcorn.verdicts(report, call.specs)
        elif call.mode in ("benchmark", "leaderboard"):
            result.shapes += popcorn.timings(report, call.specs)[0]
        else:
            result.profiles += popcorn.profiles(report, call.specs)
        failure = failure or _failure(outcome)
    if failure is None and job.mode in (Mode.BENCHMARK, Mode.RANKED):
        if result.shapes:
            result.score_us = stats.score([s.mean_us for s in result.shapes], task.ranking_by)
        else:
            failure = Failure(
                FailureKind.INVALID_PROBLEM,
                "The problem's evaluator reported check: pass but no benchmark times, so this run has no score.",
            )
    if failure is not None:
        failure.log_tail = failure.log_tail or (result.stderr or result.stdout)[-3000:]
        result.status, result.failure = status_for(failure.kind), failure
    if device == "cuda":
        result.gpu_s = wall_s
    return result


def _failure(outcome: Outcome) -> Failure | None:
    """What the call's lines (or its end) say went wrong; None when it reported ``check: pass``."""
    report, status = outcome.report, outcome.exit_status
    if outcome.stopped_for is not None:
        return outcome.stopped_for
    if (broken := report.get(HARNESS_MARK)) is not None:
        return Failure(
            FailureKind.HARNESS_ERROR,
            f"The problem's evaluator could not be started ({broken}). This is "
            "not your submission's fault; tell the kernelrank maintainers.",
        )
    check, error = report.get("check"), report.get("error")
    clean_exit = status is not None and os.waitstatus_to_exitcode(status) == 0
    if check is None and outcome.call.mode == "profile" and clean_exit:
        return None  # the public evaluator's profile run reports its profiles, not a check
    if check == "pass":
        failed = popcorn.timings(report, outcome.call.specs)[1] if outcome.call.mode != "test" else []
        return (
            None
            if not failed
            else Failure(FailureKind.WRONG_OUTPUT, f"The problem's evaluator rejected the submission: {failed[0]}")
        )
    if check == "fail":
        reasons = [t.message for t in popcorn.verdicts(report, outcome.call.specs) if not t.passed and t.message]
        reasons += popcorn.timings(report, outcome.call.specs)[1]
        reason = (reasons or [error or "it reported check: fail without a reason"])[0]
        return Failure(
            FailureKind.WRONG_OUTPUT,
            f"The problem's evaluator rejected the submission in its {outcome.call.mode} run: {reason}",
        )
    if status is not None and os.WIFSIGNALED(status):
        ended = f"was killed by signal {os.WTERMSIG(status)}"
    else:
        ended = f"exited with status {os.waitstatus_to_exitcode(status) if status is not None else 'unknown'}"
    said = f": {error}" if error else ""
    return Failure(
        FailureKind.CRASH,
        f"The problem's evaluator {ended} in its {outcome.call.mode} run without "
        f"writing a 'check' line{said}, so the run has no verdict: the submission or "
        "the evaluator crashed or ended the process early; the log below shows where.",
    )
