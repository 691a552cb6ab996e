"""Runs one job in a freshly forked, sandboxed child and watches it from outside.

The supervisor lives in the harness server, a process that never runs submitted code. Per job it runs the static
pre-check, stages the files, opens a private channel and forks the child, which enters its sandbox
(``harness.isolation.sandbox``) and runs ``harness.judge.judge_process``. Until the child exits,
``harness.host.watch`` reads its channel, answers it, forwards progress and stops the job on any limit it breaks.
Afterwards the supervisor kills the job's cgroup and whatever is left below the server, checks that the GPU is idle,
and builds the result (``harness.host.assembly``); a ranked run with a flagged construct is held for review
(``harness.host.precheck``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import socket
import time

from harness.builds.builder import Builds, build_cache, build_cu, compile_failure
from harness.device import gpu_idle
from harness.failures import failed_result
from harness.host import expected, precheck
from harness.host.assembly import Ending, build_result
from harness.host.watch import MEMORY_CHECK_S, Caller, Emit, Watch
from harness.isolation import cgroups, processes
from harness.isolation.sandbox import Capability, Launch
from harness.isolation.staging import Stage, StagingError
from harness.isolation.zygote import Zygote, hand_over
from harness.job import EvalJob
from harness.limits import Limits
from harness.result import EvalResult, Failure, FailureKind, Mode, SandboxInfo
from harness.seeds import SeedSource, run_key

log = logging.getLogger(__name__)


def run_job(
    job: EvalJob, capability: Capability, zygote: Zygote, emit: Emit | None = None, caller: Caller | None = None
) -> EvalResult:
    """Evaluate ``job`` in a fresh, sandboxed child of ``zygote``; ``emit`` receives {"t": "started" | "progress",
    ...}.

    With a ``caller``, a ranked run waits for its key from it and ends if it goes away; without one the key
    is made here from ``job.secret_seed``.
    """
    started = time.monotonic()
    if job.problem.task.lang != "cu" and job.submission_name.lower().endswith((".cu", ".cuh")):
        return failed_result(
            job,
            Failure(
                FailureKind.UNSUPPORTED,
                f"The problem {job.problem.name} takes Python "
                "submissions (PyTorch, Triton, JAX or inline CUDA in a .py file defining "
                "custom_kernel), not a .cu file; CUDA C++ files go to lang: cu problems.",
            ),
            started,
        )
    findings = precheck.check(job.submission_source, job.submission_name)
    try:
        stage = Stage.create(job.problem, job.submission_source)
    except (StagingError, OSError) as exc:
        return failed_result(
            job, Failure(FailureKind.INVALID_PROBLEM, f"The problem's files cannot be staged: {exc}."), started
        )
    job_builds = Builds(build_cache(), capability)
    compiled = build_cu(job, job_builds, stage) if job.problem.task.lang == "cu" else None
    if compiled is not None and not compiled.ok:
        stage.remove()
        return compile_failure(job, compiled, started)
    try:
        limits = Limits.for_job(job.memory_limit_mb, job.problem.task.timeout_s(job.mode))
        seeds = SeedSource(expected.first_calls(job), ranked=job.mode is Mode.RANKED)
        if caller is None:
            seeds.set_key(run_key(job.secret_seed))
        launch = Launch.plan(capability, limits, stage)
        ending, leftovers, kernel = _supervise(job, launch, seeds, zygote, emit or (lambda r: None), caller, job_builds)
        result = build_result(job, ending, stage, time.monotonic() - started)
        if compiled is not None:
            result.compile_s += compiled.seconds
            result.phases_s["compile"] = compiled.seconds
            if compiled.log:  # warnings: kept in the log, never in the verdict
                result.stderr = f"[compiler]\n{compiled.log}\n[run]\n{result.stderr}"
        result.sandbox = SandboxInfo(
            isolated=capability.isolated,
            description=capability.describe(),
            memory_limit_mb=limits.memory_mb,
            leftovers=leftovers,
            refused_tasks=kernel.refused_tasks,
            throttled_periods=kernel.throttled_periods,
        )
        if result.system.device == "cuda":
            result.sandbox.gpu_idle = gpu_idle()
        precheck.hold(result, findings)
        return result
    finally:
        stage.remove()


def _supervise(
    job: EvalJob,
    launch: Launch,
    seeds: SeedSource,
    zygote: Zygote,
    emit: Emit,
    caller: Caller | None,
    job_builds: Builds,
) -> tuple[Ending, int, cgroups.Counts]:
    nonce = secrets.token_hex(16)
    ours, theirs = socket.socketpair()  # non-inheritable: processes the child execs do not get it
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    stdout_fd = os.open(launch.stage.stdout_path, flags, 0o600)
    stderr_fd = os.open(launch.stage.stderr_path, flags, 0o600)
    child_job = dataclasses.replace(job, secret_seed=None, memory_limit_mb=launch.limits.memory_mb)
    try:
        pid = zygote.spawn((theirs.fileno(), stdout_fd, stderr_fd))  # a process that never held a job
    finally:
        theirs.close()
        for fd in (stdout_fd, stderr_fd):
            os.close(fd)
    group = cgroups.place(launch.capability.cgroups, pid, launch.limits.tasks, launch.limits.cpu_cores)
    hand_over(ours, job=child_job, launch=launch, nonce=nonce)  # the job reaches it only now
    ours.setblocking(False)  # a child that stops reading must not stall the watch
    meter = processes.MemoryMeter(os.getpid(), launch.limits.memory_mb * 2**20, MEMORY_CHECK_S, spare=zygote.pid)
    watch = Watch(job, launch, pid, ours, nonce, seeds, meter, emit, caller, job_builds, zygote.pid, group)
    try:
        with meter:
            emit({"t": "started", "pid": pid})
            ending = watch.run()
        expected.check_complete(job, ending)
    finally:
        if watch.building is not None:
            watch.building.kill()
        processes.kill(pid)
        ours.close()
        killed = group.kill() if group is not None else 0  # at once, however many it forked
    survivors = max(killed, processes.sweep(os.getpid(), spare=zygote.pid))  # nothing of the job may outlive it
    kernel = cgroups.Counts()
    if group is not None:
        kernel = group.counts()
        group.remove()
    if survivors:
        log.warning("killed %d processes of run %s that outlived its sandbox", survivors, job.run_id)
    return ending, max(watch.leftovers, survivors), kernel  # without namespaces, the survivors are the leftovers
