"""The judge's handle on its runner: fork it, stage inputs, bracket each call, copy the answer home.

``RunnerLink.spawn`` forks the runner (``harness.runner``) before the judge has bound the reference or
touched CUDA, closes the judge's result channel in it, and makes the judge undumpable, so the runner can
neither trace the judge nor open its memory or descriptors under /proc. Per call (``call``):

1. stage: host tensors go as bytes in the request; CUDA tensors are copied into buffers the runner
   allocated and shared (the judge maps the runner's memory, never the reverse) and the copy is finished;
2. bracket: clock, "go", wait for "done" with the output and the inputs as the call left them, and on
   CUDA for the runner's queued work (its IPC events), clock;
3. copy the answer into the judge's own memory: from here on the runner cannot change what is checked.

Anything unexpected from the runner ends the evaluation with a named failure; its death is a crash.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from harness import linux, runner, transport
from harness.channel import Outbox, RecordReader, read_record
from harness.failures import Verdict, process_ended
from harness.job import EvalJob
from harness.result import FailureKind
from harness.timing import CallTiming

_clock_ns = time.perf_counter_ns
CLOSE_WAIT_S = 5.0
CALIBRATION_CALLS = 40
CALIBRATION_ELEMENTS = 256  # the calibration's input: small, so its transfer costs next to nothing
# failure kinds a runner may report about itself; anything else it claims reads as an exception
_RUNNER_KINDS = frozenset(
    {
        FailureKind.SYNTAX_ERROR,
        FailureKind.MISSING_ENTRY_POINT,
        FailureKind.IMPORT_ERROR,
        FailureKind.COMPILE_ERROR,
        FailureKind.EXCEPTION,
        FailureKind.BAD_OUTPUT_TYPE,
        FailureKind.CRASH,
        FailureKind.CUDA_ERROR,
        FailureKind.OUT_OF_MEMORY,
        FailureKind.ESCAPED_TIMING,
        FailureKind.TAMPERING,
        FailureKind.RESOURCE_LIMIT,
    }
)


@dataclass
class Answer:
    """One call as the judge holds it: copies in the judge's memory, the runner's report, the bracket."""

    output: Any
    inputs: Any  # the inputs as the call left them (in-place writes show here)
    timing: CallTiming
    bracket_us: float  # the judge's clock from go to the whole answer (and, on CUDA, its work done)
    spent_us: float  # what the call cost as the judge sees it (harness.brackets): the bracket on
    # CUDA; on the CPU the runner's CPU time in the bracket over the cores it has
    payload_bytes: int  # bytes the answer carried through the socket inside the bracket
    address: int  # where the runner's output lived (diagnostic)


class Runner(Protocol):
    """What the modes need of the submission's side: a process of its own (``RunnerLink``) or, for ``lang: cu``
    problems, the judge's own (``harness.inprocess``)."""

    def start(self, device: str) -> None: ...
    def import_submission(self) -> None: ...
    def calibrate(self, calls: int = ...) -> list[Answer]: ...
    def call(self, data: Any, timed: bool, host: bool, during: str, calibration: bool = False) -> Answer: ...
    def busy(self, seconds: float) -> None: ...
    def profile(self, calls: list[Callable[[], Any]], rows: int) -> str: ...
    def compile_seconds(self) -> float: ...
    def close(self) -> None: ...


class RunnerLink:
    def __init__(self, pid: int, link: transport.Link, outbox: Outbox, cores: float) -> None:
        self.pid = pid
        self.link = link
        self.outbox = outbox
        self.device = "cpu"
        self._staging: list[torch.UntypedStorage] = []  # the runner's input buffers of the call, mapped here
        self._opening_ns = 0  # the judge's own time spent mapping, per call
        self._cpu_clock = ((~pid) << 3) | 2  # the runner's process CPU clock (CPUCLOCK_SCHED, all threads)
        self._cores = max(1.0, min(len(os.sched_getaffinity(0)), cores))  # its CPU quota may allow fewer

    @classmethod
    def spawn(cls, job: EvalJob, outbox: Outbox, max_bytes: int, cores: float) -> RunnerLink:
        """Fork the runner; call before anything of the problem is loaded and before CUDA is touched. ``cores``:
        the CPU the job may use (its quota), which its CPU time is spread over."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ours.close()
            os.close(outbox.fd)  # the runner never holds the judge's result channel
            runner.serve(transport.Link(theirs, max_bytes), job)
        theirs.close()
        linux.prctl(linux.PR_SET_DUMPABLE, 0)  # no ptrace, /proc/<judge>/mem or /proc/<judge>/fd for the runner
        return cls(pid, transport.Link(ours, max_bytes), outbox, cores)

    def start(self, device: str) -> None:
        self.device = device
        self._ask({"op": "start", "device": device}, "ready")

    def import_submission(self) -> None:
        self._ask({"op": "import"}, "imported")

    def busy(self, seconds: float) -> None:
        self._ask({"op": "busy", "seconds": seconds}, "busy")

    def compile_seconds(self) -> float:
        record, _ = self._ask({"op": "accounting"}, "accounting")
        value = record.get("compile_s")
        return float(value) if isinstance(value, (int, float)) and value >= 0 else 0.0

    def calibrate(self, calls: int = CALIBRATION_CALLS) -> list[Answer]:
        """Timed calls of the harness's own (a small input in, a fresh output like it back, through every step a
        real call takes): before the submission is imported they measure the exchange alone (the allowance);
        after it, the runner's own sync gap."""
        probe = torch.zeros(CALIBRATION_ELEMENTS, device=self.device)
        return [
            self.call(probe, timed=True, host=False, during="the calibration", calibration=True) for _ in range(calls)
        ]

    def profile(self, calls: list[Callable[[], Any]], rows: int) -> str:
        """Torch's profiler table of ``calls`` (judge calls of the runner), profiled in the runner."""
        self._ask({"op": "profile"}, "profiling")
        for call in calls:
            call()
        record, _ = self._ask({"op": "profile", "rows": rows}, "profiled")
        return str(record.get("table", ""))[:100_000]

    def call(self, data: Any, timed: bool, host: bool, during: str, calibration: bool = False) -> Answer:
        """Stage the call (outside the bracket), then bracket go -> the answer."""
        request: dict[str, Any] = {
            "op": "stage",
            "timed": timed,
            "host": host,
            "during": during,
            "calibration": calibration,
        }
        blobs: list[memoryview] = []
        storages: transport.Storages = []
        try:
            request["value"] = transport.pack(data, storages)
        except transport.TransportError as exc:
            raise Verdict(
                FailureKind.INVALID_PROBLEM,
                f"The problem's input cannot be handed to the submission's "
                f"process ({exc}); tell the leaderboard's maintainers.",
            ) from None
        request["storages"], blobs = self._stage(storages)
        self.link.send(request, blobs)
        self._receive("staged", during)
        self._opening_ns = 0
        cpu_from = time.clock_gettime_ns(self._cpu_clock)
        started = _clock_ns()
        self.link.send({"op": "go"})
        record, answer_blobs = self._receive("done", during)
        try:
            return self._answer(record, answer_blobs, started, cpu_from)
        finally:
            self._staging = []

    def close(self) -> None:
        """End the runner: it leaves on end of file; one that does not is killed."""
        self._staging = []
        with contextlib.suppress(OSError):
            self.link.close()
        deadline = time.monotonic() + CLOSE_WAIT_S
        while time.monotonic() < deadline:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    return
            except ChildProcessError:  # reaped already (``_ended``): its pid may name another process by now
                return
            time.sleep(0.01)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)

    # ---- staging and answers --------------------------------------------------------------------------

    def _stage(self, storages: transport.Storages) -> tuple[list[dict[str, Any]], list[memoryview]]:
        cuda = [s for s in storages if s.device.type == "cuda"]
        if cuda:
            record, _ = self._ask({"op": "alloc", "sizes": [s.nbytes() for s in cuda]}, "allocated")
            shared = record.get("storages")
            if not isinstance(shared, list) or len(shared) != len(cuda):
                raise self._tampering("it answered a request for input buffers with something else")
            try:
                self._staging = [transport.open_cuda(handle) for handle in shared]
            except transport.TransportError as exc:
                raise self._tampering(str(exc)) from None
            for target, source in zip(self._staging, cuda, strict=True):
                if target.nbytes() != source.nbytes():
                    raise self._tampering("it shared input buffers of other sizes than asked for")
                transport.copy_into(target, source)
            torch.cuda.synchronize()  # the inputs are in place before the runner is told to go
        described, index = [], 0
        for storage in storages:
            if storage.device.type == "cuda":
                described.append({"staged": index})
                index += 1
            else:
                described.append({"cpu": storage.nbytes()})
        return described, transport.cpu_blobs([s for s in storages if s.device.type == "cpu"])

    def _answer(self, record: dict[str, Any], blobs: list[bytearray], started: int, cpu_from: int) -> Answer:
        described = record.get("storages")
        if not isinstance(described, list):
            raise self._tampering("it answered a call without describing its memory")
        host = iter(transport.cpu_storages(blobs))
        if sum(1 for d in described if isinstance(d, dict) and "cpu" in d) != len(blobs):
            raise self._tampering("it answered a call with memory it did not send")
        mapped: list[torch.UntypedStorage] = []
        try:
            for entry in described:
                mapped.append(
                    next(host)
                    if "cpu" in entry
                    else self._open(entry.get("cuda") or {})
                    if "cuda" in entry
                    else self._staged(int(entry["staged"]))
                )
            if self.device == "cuda":
                self._open(record.get("fence") or {})  # waits for the runner's stream past the call
                torch.cuda.synchronize()
        except (TypeError, KeyError, ValueError, transport.TransportError) as exc:
            raise self._tampering(f"it described its answer's memory wrongly ({exc})") from None
        # the host's cost of mapping is the judge's own; the waits it queued are counted (they end at the sync)
        bracket_us = (_clock_ns() - started - self._opening_ns) / 1000
        # on the CPU, time on the runner's cores is what it cannot fake and what waiting for a core does not inflate
        cpu_us = (time.clock_gettime_ns(self._cpu_clock) - cpu_from) / 1000 / self._cores
        spent_us = cpu_us if self.device == "cpu" else bracket_us
        own = [s if s.device.type == "cpu" else transport.copy_storage(s) for s in mapped]
        try:
            value = transport.unpack(record.get("value"), own)
            timing = _timing(record.get("timing"))
        except (transport.TransportError, TypeError, ValueError) as exc:
            raise self._tampering(f"it answered a call with a malformed value ({exc})") from None
        if not isinstance(value, dict) or set(value) != {"output", "inputs"}:
            raise self._tampering("it answered a call with something other than an output and its inputs")
        address = record.get("address")
        return Answer(
            value["output"],
            value["inputs"],
            timing,
            bracket_us,
            spent_us,
            sum(len(b) for b in blobs),
            address if isinstance(address, int) else 0,
        )

    def _open(self, shared: dict[str, Any]) -> torch.UntypedStorage:
        """Map runner memory for one answer; the current stream waits for the work the runner queued before it
        shared it. Mapped afresh each time and dropped after the copy, so the runner's allocator may reuse it."""
        opening = _clock_ns()
        try:
            return transport.open_cuda(shared)
        finally:
            self._opening_ns += _clock_ns() - opening

    def _staged(self, index: int) -> torch.UntypedStorage:
        if not 0 <= index < len(self._staging):
            raise KeyError(f"no staged buffer {index}")
        return self._staging[index]

    # ---- messages ----------------------------------------------------------------------------------------

    def _ask(self, request: dict[str, Any], answer: str) -> tuple[dict[str, Any], list[bytearray]]:
        self.link.send(request)
        return self._receive(answer, "the evaluation")

    def _receive(self, wanted: str, during: str) -> tuple[dict[str, Any], list[bytearray]]:
        """The runner's answer ``wanted``, relaying its build requests and progress on the way."""
        while True:
            try:
                record, blobs = self.link.receive()
            except EOFError:
                raise self._ended(during) from None
            except transport.TransportError as exc:
                raise self._tampering(str(exc)) from None
            kind = record.get("t")
            if kind == wanted:
                return record, blobs
            if kind == "failure":
                raise _reported(record.get("failure"))
            if kind == "build" and isinstance(record.get("arguments"), dict):
                self.outbox.send("build", arguments=record["arguments"])
                self.link.send(read_record(self.outbox.fd, RecordReader()))
            elif kind == "progress" and record.get("stage") == "compiling":
                self.outbox.progress("compiling")
            else:
                raise self._tampering(f"it sent a {str(kind)[:40]!r} message while the judge waited for {wanted!r}")

    def _ended(self, during: str) -> Verdict:
        status = 0
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(self.pid, 0)
        failure = process_ended(status, f"during {during}")
        return Verdict(failure.kind, failure.message)

    def _tampering(self, what: str) -> Verdict:
        return Verdict(
            FailureKind.TAMPERING,
            f"The submission's process broke the judge's protocol: {what}. Only "
            "the harness talks on that channel; a submission may only compute its output.",
        )


def _reported(failure: Any) -> Verdict:
    """A failure the runner reports about itself: believed only as a failure, and only of a kind it may claim."""
    if not isinstance(failure, dict):
        failure = {}
    try:
        kind = FailureKind(failure.get("kind"))
    except ValueError:
        kind = FailureKind.EXCEPTION
    return Verdict(
        kind if kind in _RUNNER_KINDS else FailureKind.EXCEPTION,
        str(failure.get("message", ""))[:4000] or "The submission's process reported a failure.",
        str(failure.get("log_tail", ""))[-4000:],
    )


def _timing(raw: Any) -> CallTiming:
    if not isinstance(raw, dict):
        raise TypeError("no timing")
    fields = {name: float(raw.get(name, 0.0)) for name in ("event_us", "sync_us", "flush_us", "clock_mhz", "host_us")}
    return CallTiming(**fields)
