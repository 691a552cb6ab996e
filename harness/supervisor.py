"""Runs one job in a freshly forked, sandboxed child and watches it from outside.

The supervisor lives in the harness server, a process that never runs submitted code. Per job it stages
the files, opens a private pipe, forks the child (``harness.worker``) and then, until the child exits:
reads the nonce-stamped records from the pipe (nothing is ever read from stdout), forwards progress,
and stops the whole process group on a wall-clock timeout, on too much resident memory, on an output
flood, or on a record the harness did not write. The result is then built from what it saw
(``harness.assembly``).
"""

from __future__ import annotations

import logging
import os
import secrets
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness import worker
from harness.assembly import Ending, build_result
from harness.channel import ChannelError, RecordReader
from harness.codec import DecodeError, from_jsonable, to_jsonable
from harness.failures import failed_result
from harness.job import EvalJob
from harness.result import EvalResult, Failure, FailureKind, Progress
from harness.sandbox import group_rss_bytes, kill_group
from harness.staging import Stage, StagingError

log = logging.getLogger(__name__)

POLL_S = 0.05                     # how often limits are checked while the child runs
FLOOD_BYTES = 16 * 1024 * 1024    # captured stdout or stderr beyond this is a flood
KILL_WAIT_S = 10.0                # a killed child that is still not gone after this is abandoned
DRAIN_S = 1.0                     # reading what is left in the pipe after the child ended

Emit = Callable[[dict[str, Any]], None]


def run_job(job: EvalJob, emit: Emit | None = None, cancel_fd: int | None = None) -> EvalResult:
    """Evaluate ``job`` in a fresh child; ``emit`` receives {"t": "started" | "progress", ...} records.

    ``cancel_fd`` (the server's client socket) is watched too: if it closes, the child is stopped.
    """
    started = time.monotonic()
    if job.problem.task.lang == "cu" or job.submission_name.lower().endswith((".cu", ".cuh")):
        return failed_result(job, Failure(FailureKind.UNSUPPORTED, "CUDA (.cu) leaderboards arrive with the CUDA "
                                          "issue; submit a Python file (PyTorch, Triton or inline CUDA) for now."),
                             started)
    try:
        stage = Stage.create(job.problem, job.submission_source)
    except (StagingError, OSError) as exc:
        return failed_result(job, Failure(FailureKind.INVALID_PROBLEM, f"The problem's files cannot be staged: {exc}."),
                             started)
    try:
        ending = _supervise(job, stage, emit or (lambda record: None), cancel_fd)
        return build_result(job, ending, stage, time.monotonic() - started)
    finally:
        stage.remove()


def _supervise(job: EvalJob, stage: Stage, emit: Emit, cancel_fd: int | None) -> Ending:
    nonce = secrets.token_hex(16)
    read_fd, write_fd = os.pipe()          # non-inheritable: processes the child execs do not get it
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    stdout_fd = os.open(stage.stdout_path, flags, 0o600)
    stderr_fd = os.open(stage.stderr_path, flags, 0o600)
    pid = os.fork()
    if pid == 0:
        worker.child_main(job, stage, nonce, write_fd, stdout_fd, stderr_fd)
    for fd in (write_fd, stdout_fd, stderr_fd):
        os.close(fd)
    try:
        emit({"t": "started", "pid": pid})
        return _Watch(job, stage, pid, read_fd, nonce, emit, cancel_fd).run()
    finally:
        kill_group(pid)
        os.close(read_fd)


@dataclass
class _Watch:
    job: EvalJob
    stage: Stage
    pid: int
    read_fd: int
    nonce: str
    emit: Emit
    cancel_fd: int | None
    ending: Ending = field(default_factory=Ending)
    reader: RecordReader = field(default_factory=RecordReader)

    def run(self) -> Ending:
        timeout_s = self.job.problem.task.timeout_s(self.job.mode)
        deadline = time.monotonic() + timeout_s
        killed_at: float | None = None
        selector = selectors.DefaultSelector()
        selector.register(self.read_fd, selectors.EVENT_READ, "result")
        if self.cancel_fd is not None:
            selector.register(self.cancel_fd, selectors.EVENT_READ, "cancel")
        while True:
            for key, _ in selector.select(POLL_S):
                if key.data == "result" and not self._read():
                    selector.unregister(self.read_fd)
                elif key.data == "cancel":
                    selector.unregister(self.cancel_fd)
                    if _closed(self.cancel_fd):
                        self._stop(Failure(FailureKind.HARNESS_ERROR, "The evaluation was cancelled: its caller "
                                                                      "went away."))
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.ending.exit_status = status
                break
            if self.ending.stopped_for is None:
                self._check_limits(deadline, timeout_s)
            elif killed_at is None:
                killed_at = time.monotonic()
            elif time.monotonic() - killed_at > KILL_WAIT_S:
                log.error("child %d did not die after SIGKILL; abandoning it", self.pid)
                break
        kill_group(self.pid)      # whatever the child started goes with it
        if self.cancel_fd is not None and self.cancel_fd in selector.get_map():
            selector.unregister(self.cancel_fd)
        self._drain(selector)
        self._check_flood()
        return self.ending

    def _read(self) -> bool:
        """Take what the pipe holds; False at end of file."""
        chunk = os.read(self.read_fd, 1 << 16)
        if not chunk:
            return False
        try:
            records = self.reader.feed(chunk)
        except ChannelError as exc:
            self._forged(str(exc))
            return True
        for record in records:
            self._take(record)
        return True

    def _take(self, record: dict[str, Any]) -> None:
        if record.get("nonce") != self.nonce:
            self._forged("a record without this run's nonce")
        elif self.ending.final:
            self._forged("a record after the final one")
        elif record.get("t") == "progress":
            try:
                progress = to_jsonable(from_jsonable(Progress, record.get("progress")))
            except DecodeError:
                self._forged("a malformed progress record")
                return
            self.ending.last_progress = progress
            self.emit({"t": "progress", "progress": progress})
        elif record.get("t") == "final":
            self.ending.final = True
        else:
            self.ending.records.append(record)

    def _forged(self, what: str) -> None:
        log.warning("result channel of child %d: %s", self.pid, what)
        self._stop(Failure(FailureKind.TAMPERING, "The private result channel received a record the harness did not "
                                                  "write, so the evaluation was stopped. Submissions must not write "
                                                  "to the harness's descriptors."))

    def _stop(self, failure: Failure) -> None:
        if self.ending.stopped_for is None:
            self.ending.stopped_for = failure
            kill_group(self.pid)

    def _check_limits(self, deadline: float, timeout_s: float) -> None:
        where = self.ending.where()
        if time.monotonic() > deadline:
            self._stop(Failure(FailureKind.TIMEOUT, f"The evaluation did not finish within the {timeout_s:g} s limit "
                                                    f"of {self.job.mode.value} mode and was stopped while {where}. "
                                                    "Look for an infinite loop, a deadlock or a kernel that never "
                                                    "returns."))
            return
        limit_mb = self.job.memory_limit_mb
        if group_rss_bytes(self.pid) > limit_mb * 1024 * 1024:
            self._stop(Failure(FailureKind.OUT_OF_MEMORY, f"The submission's process used more than {limit_mb} MB "
                                                          f"of host memory and was stopped while {where}. Allocate "
                                                          "less memory."))
            return
        self._check_flood()

    def _check_flood(self) -> None:
        written = max(_size(self.stage.stdout_path), _size(self.stage.stderr_path))
        if written > FLOOD_BYTES:
            # a flood outranks whatever it caused (a failed write reads as an exception)
            self.ending.stopped_for = None
            self._stop(Failure(FailureKind.OUTPUT_FLOOD, f"The submission wrote more than {FLOOD_BYTES // 2**20} MiB "
                                                         f"of output and was stopped while {self.ending.where()}. "
                                                         "Print less: output is capped."))

    def _drain(self, selector: selectors.BaseSelector) -> None:
        """Read the records still in the pipe once the child is gone."""
        until = time.monotonic() + DRAIN_S
        while self.read_fd in selector.get_map() and time.monotonic() < until:
            if selector.select(max(0.0, until - time.monotonic())) and not self._read():
                selector.unregister(self.read_fd)
        if self.reader.partial and self.ending.stopped_for is None:
            self._forged("a record cut off in the middle")
        selector.close()


def _size(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _closed(fd: int) -> bool:
    """True when the peer of socket ``fd`` has hung up (readable with nothing to read)."""
    with socket.socket(fileno=os.dup(fd)) as sock:
        try:
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True
