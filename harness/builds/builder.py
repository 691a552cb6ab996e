"""Builds in a sandboxed child of the harness server, and the compile cache in front of them.

The server never compiles a submission's code in its own process, and never lets a submission's process
write the cache: ``BuildProcess`` forks a child that enters the same sandbox as an evaluation
(``harness.isolation.sandbox``: namespaces, read-only system folders, no network, a user of its own), runs only
``harness.builds.build.run`` (the compilers) on the request's sources, and sends the built files back over a
private channel. The server stores them under the request's key (computed by the server from the request,
never taken from the child) and hands copies to jobs. A poisoned build can only ever sit under the key of
its own sources and flags.

``Builds`` is the server's front: a cache hit answers at once; a miss starts a ``BuildProcess``, which the
caller either waits for (``.cu`` submissions, before their job starts) or polls from its watch loop
(``load_inline`` calls made while a job runs).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import logging
import os
import secrets
import selectors
import socket
import tempfile
import time
import traceback
from pathlib import Path

from harness.builds import build, header_tiers, toolchain
from harness.builds.build import BuildOutcome, BuildRequest
from harness.builds.cache import BuildCache
from harness.channel import ChannelError, Outbox, RecordReader
from harness.failures import failed_result
from harness.isolation import processes, rootfs, sandbox
from harness.isolation.staging import Stage
from harness.job import EvalJob
from harness.limits import Limits
from harness.result import EvalResult, Failure, FailureKind

log = logging.getLogger(__name__)

BUILD_MEMORY_MB = 16384  # nvcc and cicc on torch's headers take a few GB; capped by the host's share
BUILDS_PER_JOB = 16  # load_inline calls one evaluation may have built for it
POLL_S = 0.05


class BuildProcess:
    """One build running in a sandboxed child; ``poll`` until it gives an outcome."""

    def __init__(self, request: BuildRequest, capability: sandbox.Capability, timeout_s: float) -> None:
        self.request = request
        self.deadline = time.monotonic() + timeout_s
        self._started = time.monotonic()
        self._stage = Stage.empty(Path(tempfile.mkdtemp(prefix=f"kernelrank-{os.getpid()}-build-")))
        limits = Limits.for_job(BUILD_MEMORY_MB, timeout_s)
        launch = sandbox.Launch.plan(capability, limits, self._stage)
        self._nonce = secrets.token_hex(16)
        self._channel, theirs = socket.socketpair()
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
        out = os.open(self._stage.stdout_path, flags, 0o600)
        err = os.open(self._stage.stderr_path, flags, 0o600)
        self.pid = os.fork()
        if self.pid == 0:
            _child(request, launch, self._nonce, theirs.fileno(), out, err, timeout_s)
        theirs.close()
        os.close(out)
        os.close(err)
        self._channel.setblocking(False)
        self._reader = RecordReader()
        self._reply: dict | None = None
        self.outcome: BuildOutcome | None = None

    def fileno(self) -> int:
        return self._channel.fileno()

    def poll(self) -> BuildOutcome | None:
        """The outcome once the child is done (it is then cleaned up); None while it still builds."""
        if self.outcome is not None:
            return self.outcome
        self._read()
        done, status = os.waitpid(self.pid, os.WNOHANG)
        if not done and time.monotonic() < self.deadline:
            return None
        if not done:
            self._finish(BuildOutcome(False, message="The build did not finish in time and was stopped"))
        else:
            self._read()
            self._finish(self._decode(status))
        return self.outcome

    def wait(self) -> BuildOutcome:
        with selectors.DefaultSelector() as selector:
            selector.register(self._channel, selectors.EVENT_READ)
            while (outcome := self.poll()) is None:
                selector.select(POLL_S)
        return outcome

    def kill(self) -> None:
        if self.outcome is None:
            self._finish(BuildOutcome(False, message="The build was cancelled"))

    def _read(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError, ChannelError):
            while chunk := self._channel.recv(1 << 20):
                for record in self._reader.feed(chunk):
                    if record.get("nonce") == self._nonce and record.get("t") == "built":
                        self._reply = record

    def _decode(self, status: int) -> BuildOutcome:
        reply = self._reply
        if reply is None:
            tail = _tail(self._stage.stderr_path)
            return BuildOutcome(False, log=tail, message=f"The builder ended without a result (status {status})")
        try:
            return BuildOutcome(
                bool(reply["ok"]),
                {str(name): base64.b64decode(data) for name, data in dict(reply["files"]).items()},
                str(reply["log"]),
                str(reply["message"]),
                float(reply["seconds"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            return BuildOutcome(False, message=f"The builder's result is unreadable ({exc})")

    def _finish(self, outcome: BuildOutcome) -> None:
        processes.kill(self.pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self._channel.close()
        self._stage.remove()
        outcome.seconds = outcome.seconds or time.monotonic() - self._started
        self.outcome = outcome


class Builds:
    """The server's builds for one job: the cache first, then a sandboxed build that fills it."""

    def __init__(self, cache: BuildCache | None, capability: sandbox.Capability) -> None:
        self.cache = cache
        self.capability = capability
        self.started = 0

    def start(self, request: BuildRequest, timeout_s: float) -> BuildOutcome | BuildProcess:
        """A cached outcome at once, or a running build (``finish`` its outcome when it is done)."""
        build_key = request.key()
        if self.cache is not None and (entry := self.cache.lookup(build_key)) is not None:
            try:
                return BuildOutcome(True, {f.name: f.read_bytes() for f in entry.iterdir()}, cached=True)
            except OSError as exc:  # evicted in between: build again
                log.info("cache entry %s vanished (%s); building", build_key, exc)
        self.started += 1
        if request.kind == "extension":  # read here, once, so that every builder forked from now on inherits it
            header_tiers.vocabulary()
        return BuildProcess(request, self.capability, timeout_s)

    def finish(self, process: BuildProcess) -> BuildOutcome:
        """Store a finished build's files in the cache (successful builds only)."""
        outcome = process.poll()
        assert outcome is not None, "finish() before the build ended"
        summary = outcome.log.splitlines()[0][:300] if outcome.ok and outcome.log else ""
        state = "done" if outcome.ok else "failed"
        log.info("%s build %s in %.1f s. %s", process.request.kind, state, outcome.seconds, summary)
        if outcome.ok and self.cache is not None:
            try:
                self.cache.store(process.request.key(), outcome.files)
            except (OSError, ValueError) as exc:
                log.warning("could not cache build %s: %s", process.request.key(), exc)
        return outcome

    def build(self, request: BuildRequest, timeout_s: float) -> BuildOutcome:
        """Build (or find) ``request`` and wait for it."""
        started = self.start(request, timeout_s)
        if isinstance(started, BuildOutcome):
            return started
        started.wait()
        return self.finish(started)


@functools.cache
def build_cache() -> BuildCache | None:
    """This server's compile cache (``$KERNELRANK_BUILD_CACHE``), opened once."""
    return BuildCache.from_environment()


def build_cu(job: EvalJob, job_builds: Builds, stage: Stage) -> BuildOutcome | None:
    """Compile a .cu submission's two modules for this machine's GPU into the stage, side by side (each from the
    cache when it holds it): the runner's, with the submission, and the judge's, with the reference alone. None
    when there is no GPU to build for (the judge then says the problem needs CUDA)."""
    arch = toolchain.gpu_arch()
    if arch is None or job.device == "cpu":
        return None
    problem = job.problem
    timeout_s = min(build.compile_timeout_s(), problem.task.timeout_s(job.mode))
    requests = (
        build.cu_request(problem.files, problem.submission_name, job.submission_source, arch.sm),
        build.cu_reference_request(problem.files, problem.submission_name, arch.sm),
    )
    started = [job_builds.start(request, timeout_s) for request in requests]
    runner, judge = (_waited(job_builds, each) for each in started)
    if not judge.ok:  # the problem's fault, whatever the submission holds
        judge.problem_fault = True
        judge.log = build.user_log(judge.log, problem.submission_name, job.submission_name, rootfs.WORKDIR)
        return judge
    runner.log = build.user_log(runner.log, problem.submission_name, job.submission_name, rootfs.WORKDIR)
    if runner.ok:
        for name, data in {**runner.files, **judge.files}.items():
            (stage.workdir / name).write_bytes(data)
        runner.seconds = max(runner.seconds, judge.seconds)
    return runner


def _waited(job_builds: Builds, started: BuildOutcome | BuildProcess) -> BuildOutcome:
    if isinstance(started, BuildOutcome):
        return started
    started.wait()
    return job_builds.finish(started)


def compile_failure(job: EvalJob, outcome: BuildOutcome, started: float) -> EvalResult:
    where = build.first_error(outcome.log)
    message = f"{outcome.message}: {where}" if where else f"{outcome.message}."
    failure = (
        Failure(
            FailureKind.INVALID_PROBLEM,
            f"{message.rstrip('.')}. This is not your submission's fault; tell the leaderboard's maintainers.",
            outcome.log,
        )
        if outcome.problem_fault
        else Failure(
            FailureKind.COMPILE_ERROR,
            f"{message.rstrip('.')}. Fix it and submit again; the compiler's output is below.",
            outcome.log,
        )
    )
    result = failed_result(job, failure, started)
    result.compile_s = outcome.seconds
    return result


def _child(
    request: BuildRequest,
    launch: sandbox.Launch,
    nonce: str,
    channel_fd: int,
    stdout_fd: int,
    stderr_fd: int,
    timeout_s: float,
) -> None:
    """The builder: enter the sandbox, compile, send the files, end. Never returns into the server."""
    code = 0
    try:
        workdir = sandbox.enter(launch, channel_fd, stdout_fd, stderr_fd)
        outcome = build.run(request, workdir, timeout_s)
        Outbox(channel_fd, nonce).send(
            "built",
            ok=outcome.ok,
            log=outcome.log,
            message=outcome.message,
            seconds=outcome.seconds,
            files={name: base64.b64encode(data).decode() for name, data in outcome.files.items()},
        )
    except BaseException:
        code = 70
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(code)


def _tail(path: Path, chars: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""
