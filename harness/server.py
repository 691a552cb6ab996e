"""The harness server: a warm parent that forks a fresh, isolated child per evaluation.

``HarnessServer`` (the caller's side) starts ``python -m harness.server`` with a scrubbed environment and
talks to it over a private socket pair. The server imports torch once, never touches CUDA and never runs
submitted code; for each job it runs ``harness.supervisor.run_job``, which forks the child. So a job
pays for a fork, not for ``import torch``, and still gets a process of its own.

Wire (``harness.channel`` records): the server says ``{"t": "ready", "sandbox": ...}`` once at start (or
``{"t": "error", "message": ...}`` when it cannot sandbox as asked). The caller sends
``{"op": "evaluate", "job": ...}`` without the job's secret seed; the server answers ``started`` (the
child's pid), and for a ranked job the caller then sends ``{"op": "key", "key": ...}``, the run's key
(``harness.seeds``), so that neither secret is in the memory the child was forked from. Then come
``progress`` events and one ``result``.

The server is a child subreaper: whatever an evaluation starts stays below it, where the supervisor finds
and kills it (``harness.processes``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib
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

from harness import linux, sandbox, staging
from harness.channel import ChannelError, RecordReader, send_record
from harness.codec import DecodeError, from_jsonable
from harness.failures import failed_result
from harness.job import EvalJob
from harness.result import EvalResult, Failure, FailureKind, Mode, Progress
from harness.sandbox import kill_group, scrubbed_environment
from harness.seeds import run_key

log = logging.getLogger(__name__)

# Imported once by the server so that no evaluation pays for them: Triton and the C++/CUDA extension
# builder (their drivers initialise lazily), and torch's compiler stack, which torch.compile imports and so
# does torch.use_deterministic_algorithms (public problems' DeterministicContext): about 1 s per process.
PRELOADS = ("triton", "torch.utils.cpp_extension", "torch._inductor.config")
# Words in a job's files that say it will import a preload; a server started for one job loads only those.
_PRELOAD_WORDS = {
    "triton": ("triton",),
    "torch.utils.cpp_extension": ("cpp_extension",),
    "torch._inductor.config": ("torch.compile", "inductor", "use_deterministic_algorithms"),
}
START_TIMEOUT_S = 300.0  # import torch: about 4 s on a GPU host, far more on a cold disk
BACKSTOP_S = 60.0  # beyond the mode's own limit (enforced by the server) before the caller gives up
CLOSE_WAIT_S = 5.0
SERVER_NICE = -10  # jobs run at 0 (harness.sandbox): a fork bomb cannot starve the supervisor's watch
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


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
    ) -> None:
        """``sandbox_policy``: auto (namespaces where the host allows them), namespaces (refuse to start
        without them) or limits; default ``$KERNELRANK_SANDBOX``, else auto. ``preloads``: which of
        ``PRELOADS`` to import at start."""
        self.python = python
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
        env = scrubbed_environment(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))
        try:
            self._process = subprocess.Popen(
                [
                    self.python,
                    "-m",
                    "harness.server",
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
                start_new_session=True,
            )  # a Ctrl-C in the caller's terminal is the caller's to handle
        except OSError as exc:
            raise HarnessStartError(f"cannot run {self.python}: {exc.strerror}") from exc
        finally:
            theirs.close()
        self._sock, self._reader, self._pending = ours, RecordReader(), deque()
        try:
            ready = self._receive(time.monotonic() + self.start_timeout_s)
        except (EOFError, TimeoutError, OSError, ChannelError) as exc:
            self.close()
            raise HarnessStartError(
                f"the harness server did not start ({exc or type(exc).__name__}); its log is on stderr"
            ) from exc
        if ready.get("t") != "ready":
            self.close()
            raise HarnessStartError(str(ready.get("message") or f"the harness server said {ready!r}"))
        self.sandbox = str(ready.get("sandbox", ""))
        self.zygote = int(ready.get("zygote") or 0)  # the server's one process between jobs (harness.zygote)

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


def evaluate(job: EvalJob, on_progress: Callable[[Progress], None] | None = None) -> EvalResult:
    """One-shot convenience: start a harness server, evaluate ``job``, close the server."""
    server = HarnessServer(preloads=preloads_for(job))
    try:
        return server.evaluate(job, on_progress)  # reports a server that cannot start as a result
    finally:
        server.close()


def preloads_for(job: EvalJob) -> tuple[str, ...]:
    """The preloads worth their import time to a server that runs only ``job``: those its submission or problem
    files name. A wrong guess costs only time; the evaluation then imports the module itself."""
    texts = [job.submission_source, *job.problem.files.values()]
    return tuple(
        module for module in PRELOADS if any(word in text for text in texts for word in _PRELOAD_WORDS[module])
    )


def _report(on_progress: Callable[[Progress], None] | None, progress: Progress) -> None:
    if on_progress is None:
        return
    try:
        on_progress(progress)
    except Exception:
        log.exception("progress callback failed; the evaluation goes on")


# ---- the server process -------------------------------------------------------------------------------


def serve(fd: int, policy: str = "auto", preloads: tuple[str, ...] = PRELOADS) -> None:
    """Answer evaluation requests on socket ``fd`` until the caller closes it."""
    try:
        importlib.import_module("torch")
    except ImportError as exc:
        log.error("the harness needs torch (%s); install kernelrank with its 'harness' extra", exc)
        return
    for optional in preloads:
        _preload(optional)
    from harness.device import driver_version, max_sm_clock_mhz

    driver_version()  # nvidia-smi once here, not in every evaluation
    max_sm_clock_mhz()
    from harness.toolchain import gpu_arch

    if (arch := gpu_arch()) is not None:  # in-job extension builds target this GPU only
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", arch.torch)
    # the worker side (timing, checks, modes) is imported here, once, before any fork
    from harness import author_eval, supervisor, worker
    from harness.zygote import Zygote

    if opened := _gpu_devices_open():
        log.error("the harness server opened %s while preloading: forked children could not use CUDA", opened)
        return
    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    with contextlib.suppress(OSError):  # root only: the watch keeps its pace while a job hogs the cores
        os.setpriority(os.PRIO_PROCESS, 0, SERVER_NICE)
    if removed := staging.remove_orphans():
        log.info("removed %d stages that killed harness servers left behind", removed)
    link = _Link(socket.socket(fileno=fd))
    try:
        capability = sandbox.probe(policy)
    except sandbox.SandboxError as exc:
        link.send({"t": "error", "message": str(exc)})
        return
    if not capability.isolated:
        log.warning("evaluations are not isolated: %s", capability.reason)
    if capability.cgroups is None:
        log.warning("jobs run without a cgroup of their own: %s", capability.cgroups_reason)
    zygote = Zygote(worker.child_entry)  # before any job: every evaluation is forked from it (harness.zygote)
    link.send({"t": "ready", "sandbox": capability.describe(), "zygote": zygote.pid})
    try:
        while (request := link.next_request()) is not None:
            evaluate = functools.partial(supervisor.run_job, zygote=zygote)
            # an author's evaluator is exec'd, so it inherits no memory; its sweep must spare the zygote
            by_author = functools.partial(author_eval.run_job, spare=zygote.pid)
            result = _handle(request, link, capability, evaluate, by_author)
            link.send({"t": "result", "result": result.to_dict()})
    finally:
        zygote.close()


class _Link:
    """The server's socket to its caller: requests between jobs, a run's key and cancellation during one."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reader = RecordReader()

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, record: dict[str, Any]) -> None:
        send_record(self._sock, record)

    def next_request(self) -> dict[str, Any] | None:
        """The next evaluate request; None when the caller closed the socket."""
        while True:
            for record in self._take():
                if record.get("op") == "evaluate":
                    return record
            data = self._sock.recv(1 << 16)
            if not data:
                return None
            self._reader.pending.extend(self._reader.feed(data))

    def receive(self) -> list[dict[str, Any]] | None:
        """What arrived during a job (call when the socket is readable); None once the caller is gone."""
        try:
            data = self._sock.recv(1 << 16, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return []
        except OSError:
            return None
        if not data:
            return None
        self._reader.pending.extend(self._reader.feed(data))
        return self._take()

    def _take(self) -> list[dict[str, Any]]:
        records, self._reader.pending = self._reader.pending, []
        return records


def _preload(module: str) -> None:
    """Import ``module`` here, once, unless it would touch CUDA: then each evaluation imports it itself.

    On a GPU host a throwaway child tries the import first and says whether it opened an NVIDIA device.
    """
    if Path("/dev/nvidiactl").exists():
        pid = os.fork()
        if pid == 0:  # the trial: exit 0 when the import left CUDA alone
            code = 1
            with contextlib.suppress(BaseException):
                importlib.import_module(module)
                code = 2 if _gpu_devices_open() else 0
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            log.info("%s not preloaded (its import fails or touches CUDA); evaluations import it themselves", module)
            return
    try:
        importlib.import_module(module)
    except Exception as exc:
        log.info("%s not preloaded (%s); submissions that use it import it themselves", module, exc)


def _gpu_devices_open() -> list[str]:
    """NVIDIA device files this process holds open: a sign that CUDA was initialised here."""
    opened = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if (target := os.readlink(f"/proc/self/fd/{fd}")).startswith("/dev/nvidia"):
                opened.append(target)
    return opened


def _handle(
    request: dict[str, Any],
    link: _Link,
    capability: sandbox.Capability,
    run_job: Callable[..., EvalResult],
    author_run_job: Callable[..., EvalResult],
) -> EvalResult:
    job = EvalJob.from_dict(request["job"])
    if job.problem.author_evaluator is not None:  # the problem's own eval.py evaluates it
        run_job = author_run_job
    try:
        return run_job(job, capability, emit=link.send, caller=link)
    except OSError:
        raise  # the caller is gone: nothing to answer
    except Exception as exc:
        log.exception("harness failure on %s", job.run_id or job.problem.name)
        failure = Failure(
            FailureKind.HARNESS_ERROR,
            f"The harness itself failed ({type(exc).__name__}: {exc}). "
            "This is not your submission's fault; please report it.",
        )
        return failed_result(job, failure, time.monotonic())


def main() -> None:
    parser = argparse.ArgumentParser(description="kernelrank harness server (started by HarnessServer)")
    parser.add_argument("--fd", type=int, required=True, help="socket descriptor shared with the caller")
    parser.add_argument("--sandbox", choices=sandbox.POLICIES, default="auto", help="how to isolate evaluations")
    parser.add_argument("--preload", default=",".join(PRELOADS), help="modules to import once, comma-separated")
    args = parser.parse_args()
    # warnings and errors only: its stderr is the terminal of whoever runs `kernelrank eval`
    logging.basicConfig(level=logging.WARNING, format="harness-server %(levelname)s %(name)s: %(message)s")
    try:
        serve(args.fd, args.sandbox, tuple(m for m in args.preload.split(",") if m in PRELOADS))
    except (OSError, ChannelError) as exc:
        log.info("caller gone (%s); stopping", exc)
    # Nothing is left to save: skip the interpreter's teardown of torch and triton, which takes about a second.
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    main()
