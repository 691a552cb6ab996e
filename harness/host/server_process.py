"""The harness server's own process: imports torch once, then forks a fresh, isolated child per evaluation.

``python -m harness.host.server_process`` is what ``harness.host.server.HarnessServer`` starts (that module
describes the wire). ``serve`` imports torch and the preloads, probes the sandbox, starts the zygote every job is
forked from and says ``ready``; then, for each request, it runs ``harness.host.supervisor.run_job`` (or the
problem's own evaluator, ``harness.host.author_eval``) and answers with the result. It never touches CUDA and never
runs submitted code.

The server is a child subreaper: whatever an evaluation starts stays below it, where the supervisor finds and kills
it (``harness.isolation.processes``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.channel import ChannelError, RecordReader, send_record
from harness.failures import failed_result
from harness.isolation import linux, sandbox, staging
from harness.job import EvalJob
from harness.result import EvalResult, Failure, FailureKind

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
SERVER_NICE = -10  # jobs run at 0 (harness.isolation.sandbox): a fork bomb cannot starve the supervisor's watch


def preloads_for(job: EvalJob) -> tuple[str, ...]:
    """The preloads worth their import time to a server that runs only ``job``: those its submission or problem
    files name. A wrong guess costs only time; the evaluation then imports the module itself."""
    texts = [job.submission_source, *job.problem.files.values()]
    return tuple(
        module for module in PRELOADS if any(word in text for text in texts for word in _PRELOAD_WORDS[module])
    )


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
    from harness.builds.toolchain import gpu_arch

    if (arch := gpu_arch()) is not None:  # in-job extension builds target this GPU only
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", arch.torch)
    if "torch.utils.cpp_extension" in preloads:  # what torch's headers declare, read before the first inline build
        from harness.builds import header_tiers  # (it runs the preprocessor only: no import that touches the GPU)

        header_tiers.vocabulary()
    # the worker side (timing, checks, modes) is imported here, once, before any fork
    from harness.host import author_eval, supervisor
    from harness.isolation.zygote import Zygote
    from harness.judge import judge_process

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
    # before any job: every evaluation is forked from it (harness.isolation.zygote)
    zygote = Zygote(judge_process.child_entry)
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
    # warnings and errors unless an operator asks for more: its stderr is a worker's log, or `kernelrank eval`'s file
    level = os.environ.get("KERNELRANK_HARNESS_LOG", "WARNING").upper()
    logging.basicConfig(
        level=level if level in ("DEBUG", "INFO", "WARNING", "ERROR") else "WARNING",
        format="harness-server %(levelname)s %(name)s: %(message)s",
    )
    try:
        serve(args.fd, args.sandbox, tuple(m for m in args.preload.split(",") if m in PRELOADS))
    except (OSError, ChannelError) as exc:
        log.info("caller gone (%s); stopping", exc)
    # Nothing is left to save: skip the interpreter's teardown of torch and triton, which takes about a second.
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    main()
