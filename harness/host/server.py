"""The harness server, seen from its caller: a warm process that forks a fresh, isolated child per evaluation.

``HarnessServer`` (the caller's side) starts ``python -m harness.host.server_process`` with a scrubbed environment and
talks to it over a private socket pair. The server imports torch once, never touches CUDA and never runs
submitted code; for each job it runs ``harness.host.supervisor.run_job``, which forks the child. So a job
pays for a fork, not for ``import torch``, and still gets a process of its own.

Wire (``harness.channel`` records): the server says ``{"t": "ready", "sandbox": ...}`` once at start (or
``{"t": "error", "message": ...}`` when it cannot sandbox as asked). The caller sends
``{"op": "evaluate", "job": ...}`` without the job's secret seed; the server answers ``started`` (the
child's pid), and for a ranked job the caller then sends ``{"op": "key", "key": ...}``, the run's key
(``harness.seeds``), so that neither secret is in the memory the child was forked from. Then come
``progress`` events and one ``result``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.channel import ChannelError, RecordReader, send_record
from harness.codec import DecodeError, from_jsonable
from harness.failures import failed_result
from harness.host.server_process import PRELOADS, preloads_for
from harness.isolation import rootfs
from harness.isolation.environment import THREADING_ENV, scrubbed_environment
from harness.isolation.sandbox import kill_group
from harness.job import EvalJob
from harness.result import EvalResult, Failure, FailureKind, Mode, Progress
from harness.seeds import run_key

log = logging.getLogger(__name__)

START_TIMEOUT_S = 300.0  # import torch: about 4 s on a GPU host, far more on a cold disk
BACKSTOP_S = 60.0  # beyond the mode's own limit (enforced by the server) before the caller gives up
CLOSE_WAIT_S = 5.0
_PACKAGE_ROOT = str(rootfs.PACKAGE_ROOT)


class HarnessStartError(RuntimeError):
    """The harness server did not come up."""


class HarnessServer:
    """A warm harness process; ``evaluate`` runs one job at a time in a fresh child of it."""

    def __init__(
        self,
        python: str = sys.executable,
        start_timeout_s: float = START_TIMEOUT_S,
        sandbox_policy: str | None = None,
        preloads: tuple[str, ...] = PRELOADS,
        log: Path | None = None,
    ) -> None:
        """``sandbox_policy``: auto (namespaces where the host allows them), namespaces (refuse to start
        without them) or limits; default ``$KERNELRANK_SANDBOX``, else auto. ``preloads``: which of
        ``PRELOADS`` to import at start. ``log``: a file the server's log is appended to (default: this
        process's stderr)."""
        self.python = python
        self.log = log
        self.preloads = preloads
        self.start_timeout_s = start_timeout_s
        self.sandbox_policy = sandbox_policy or os.environ.get("KERNELRANK_SANDBOX") or "auto"
        self.sandbox = ""  # how the server isolates jobs, once it has started
        self.zygote = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._reader = RecordReader()
        self._pending: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._child: int | None = None  # process group of the job in flight, for cancel()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server and wait until torch is imported; raises HarnessStartError when it cannot."""
        if self.running:
            return
        self.close()
        ours, theirs = socket.socketpair()
        env = {**scrubbed_environment(os.environ), **THREADING_ENV}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))
        try:
            log = self.log.open("ab") if self.log is not None else None
        except OSError as exc:
            raise HarnessStartError(f"cannot write its log {self.log}: {exc.strerror}") from exc
        try:
            self._process = subprocess.Popen(
                [
                    self.python,
                    "-m",
                    "harness.host.server_process",
                    "--fd",
                    str(theirs.fileno()),
                    "--sandbox",
                    self.sandbox_policy,
                    "--preload",
                    ",".join(self.preloads),
                ],
                pass_fds=(theirs.fileno(),),
                env=env,
                cwd=_PACKAGE_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )  # a Ctrl-C in the caller's terminal is the caller's to handle
        except OSError as exc:
            raise HarnessStartError(f"cannot run {self.python}: {exc.strerror}") from exc
        finally:
            theirs.close()
            if log is not None:
                log.close()
        self._sock, self._reader, self._pending = ours, RecordReader(), deque()
        try:
            ready = self._receive(time.monotonic() + self.start_timeout_s)
        except (EOFError, TimeoutError, OSError, ChannelError) as exc:
            self.close()
            where = f"in {self.log}" if self.log else "on stderr"
            raise HarnessStartError(
                f"the harness server did not start ({exc or type(exc).__name__}); its log is {where}"
            ) from exc
        if ready.get("t") != "ready":
            self.close()
            raise HarnessStartError(str(ready.get("message") or f"the harness server said {ready!r}"))
        self.sandbox = str(ready.get("sandbox", ""))
        self.zygote = int(ready.get("zygote") or 0)  # the server's one process between jobs (harness.isolation.zygote)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()  # the server reads end of file and exits
            self._sock = None
        if self._process is not None:
            try:
                self._process.wait(CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def __enter__(self) -> HarnessServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def evaluate(self, job: EvalJob, on_progress: Callable[[Progress], None] | None = None) -> EvalResult:
        """Run ``job`` to its result; never raises for anything the submission does."""
        with self._lock:
            started = time.monotonic()
            try:
                self.start()
            except HarnessStartError as exc:
                failure = Failure(FailureKind.HARNESS_ERROR, f"The harness could not start: {exc}.")
                return failed_result(job, failure, started)
            self._child = None
            deadline = started + job.problem.task.timeout_s(job.mode) + BACKSTOP_S
            try:
                assert self._sock is not None
                send_record(self._sock, {"op": "evaluate", "job": dataclasses.replace(job, secret_seed=None).to_dict()})
                while True:
                    record = self._receive(deadline)
                    if record.get("t") == "started":
                        self._child = int(record["pid"])
                        if job.mode is Mode.RANKED:  # only now: the child's memory must not hold it
                            send_record(self._sock, {"op": "key", "key": run_key(job.secret_seed)})
                    elif record.get("t") == "progress":
                        _report(on_progress, from_jsonable(Progress, record["progress"]))
                    elif record.get("t") == "result":
                        return EvalResult.from_dict(record["result"])
            except TimeoutError:
                self._abandon()
                failure = Failure(
                    FailureKind.TIMEOUT,
                    "The evaluation did not finish in time and the harness stopped answering; it was restarted.",
                )
                return failed_result(job, failure, started)
            except (EOFError, OSError, ChannelError, DecodeError, KeyError, ValueError) as exc:
                log.warning("harness server lost during %s: %s", job.run_id or job.problem.name, exc)
                self._abandon()
                failure = Failure(
                    FailureKind.CRASH,
                    "The evaluation stopped unexpectedly: the harness process "
                    "ended. Try again; if it happens again with this submission, "
                    "the submission is interfering with the harness.",
                )
                return failed_result(job, failure, started)
            except BaseException:
                self._abandon()
                raise
            finally:
                self._child = None

    def _receive(self, deadline: float) -> dict[str, Any]:
        """The next record from the server; EOFError when it is gone, TimeoutError at the deadline."""
        assert self._sock is not None
        while not self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no answer from the harness server")
            self._sock.settimeout(remaining)
            data = self._sock.recv(1 << 16)
            if not data:
                raise EOFError("the harness server closed its socket")
            self._pending.extend(self._reader.feed(data))
        return self._pending.popleft()

    def cancel(self) -> None:
        """Stop the job in flight, from any thread: its ``evaluate`` returns a failure at once."""
        self._kill()

    def _abandon(self) -> None:
        """Stop a job's child and the server it hangs from; the next evaluation starts a new server."""
        self._kill()
        self.close()

    def _kill(self) -> None:
        if (child := self._child) is not None:
            kill_group(child)
        if (process := self._process) is not None:
            process.kill()


def evaluate(
    job: EvalJob, on_progress: Callable[[Progress], None] | None = None, log: Path | None = None
) -> EvalResult:
    """One-shot convenience: start a harness server (its log appended to ``log``), evaluate ``job``, close it."""
    server = HarnessServer(preloads=preloads_for(job), log=log)
    try:
        return server.evaluate(job, on_progress)  # reports a server that cannot start as a result
    finally:
        server.close()


def _report(on_progress: Callable[[Progress], None] | None, progress: Progress) -> None:
    if on_progress is None:
        return
    try:
        on_progress(progress)
    except Exception:
        log.exception("progress callback failed; the evaluation goes on")
