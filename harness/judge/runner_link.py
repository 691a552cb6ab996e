"""The judge's handle on its runner: fork it, stage inputs, bracket each call, copy the answer home.

``RunnerLink.spawn`` forks the runner (``harness.runner.runner_process``) before the judge has bound the reference or
touched CUDA, closes the judge's result channel in it, and makes the judge undumpable, so the runner can
neither trace the judge nor open its memory or descriptors under /proc. Per call (``call``):

1. CUDA inputs: the runner allocates empty buffers and shares them (the judge maps the runner's memory, never the
   reverse); nothing of the call is in them yet;
2. bracket: the judge's clock starts **before the inputs become visible to the runner**: then the CUDA inputs are
   copied into those buffers (the copy timed on the judge's own events) and the "call" request goes out with the
   host tensors as bytes; the runner calls at once and answers "done" with the output and the inputs as the call
   left them; on CUDA the judge's stream waits for the runner's queued work (its IPC events, which the judge
   always waits on, whatever the runner asks); clock. Whatever the runner does with the inputs is in the bracket;
3. copy the answer into the judge's own memory: from here on the runner cannot change what is checked.

What the bracket must account for: ``harness.judge.brackets``; the job's CPU clock: ``harness.judge.judge_clock``.

Anything unexpected from the runner ends the evaluation with a named failure; its death is a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import time
from collections.abc import Callable
from typing import Any

import torch

from harness import cuda_ipc, transport
from harness.channel import Outbox
from harness.failures import Verdict
from harness.isolation import linux
from harness.job import EvalJob
from harness.judge import brackets, calibration, judge_clock, runner_memory
from harness.judge.runner_api import Answer
from harness.judge.runner_channel import RunnerChannel
from harness.judge.runner_claims import reported_timing
from harness.result import FailureKind
from harness.runner import runner_process

MAX_BUFFER_SETS = runner_process.KEEP_ALIVE + 1  # the runner's sets of input buffers per list of sizes

_clock_ns = time.perf_counter_ns
# On the CPU the judge asks for the runner's guard after every untimed call and at most this often between timed
# ones: a look costs the judge's wall time ~0.5 ms, and the guard is a courtesy that names naive patches (a lie about
# time is the judge's clock's to catch).
GUARD_EVERY_S = 0.05
CLOSE_WAIT_S = 5.0


class RunnerLink(RunnerChannel):
    def __init__(self, pid: int, link: transport.Link, outbox: Outbox) -> None:
        super().__init__(pid, link, outbox)
        # lang: cu: what the runner's rebuilding of an input in its module costs, as the judge measured it
        # (harness.judge.cu_reference); the runner also packs each output, a copy the judge allows at its own speed
        self.rebuild_us: Callable[[Any], float] | None = None
        self._rebuilding_us = 0.0
        self.device = "cpu"
        self._staging: list[Any] = []  # the call's input buffers: CUDA storages mapped here, or host RemoteBuffers
        # the runner's sets of input buffers, by slot: CUDA storages mapped here, or where its host buffers are
        self._mapped: dict[int, list[Any]] = {}
        self._mapped_sizes: tuple[int, ...] = ()  # the sizes those sets are for
        self._opening_ns = 0  # the judge's own time spent mapping, per call
        self._events: tuple[torch.cuda.Event, torch.cuda.Event] | None = None  # times the judge's copy of inputs
        self._cpu: judge_clock.CallCpu | None = None  # the job's CPU time in a call, read on the CPU only
        self.memory: runner_memory.RunnerMemory | None = None  # on the CPU, where the judge may reach the runner's
        self.memory_refused = ""  # why it may not, where it may not (the socket carries host bytes then)
        self._imported = False
        self._guarded_at = 0.0  # when the judge last asked for the runner's guard (CPU)

    @classmethod
    def spawn(cls, job: EvalJob, outbox: Outbox, max_bytes: int) -> RunnerLink:
        """Fork the runner; call before anything of the problem is loaded and before CUDA is touched."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ours.close()
            os.close(outbox.fd)  # the runner never holds the judge's result channel
            runner_process.serve(transport.Link(theirs, max_bytes), job)
        theirs.close()
        linux.prctl(linux.PR_SET_DUMPABLE, 0)  # no ptrace, /proc/<judge>/mem or /proc/<judge>/fd for the runner
        return cls(pid, transport.Link(ours, max_bytes), outbox)

    def start(self, device: str) -> None:
        self.device = device
        record, _ = self._ask({"op": "start", "device": device}, "ready")
        self._cpu = judge_clock.CallCpu(judge_clock.JobCpu(self.pid)) if device == "cpu" else None
        if device == "cpu":
            self.memory_refused = runner_memory.probe(self.pid, record.get("probe")) or ""
            if not self.memory_refused:
                self.memory = runner_memory.RunnerMemory(self.pid, self.link.max_bytes)

    def import_submission(self) -> None:
        self._imported = True
        self._ask({"op": "import"}, "imported")

    def busy(self, seconds: float) -> None:
        self._ask({"op": "busy", "seconds": seconds}, "busy")

    def compile_seconds(self) -> float:
        record, _ = self._ask({"op": "accounting"}, "accounting")
        value = record.get("compile_s")
        return float(value) if isinstance(value, (int, float)) and value >= 0 else 0.0

    def calibrate(self, calls: int = calibration.CALLS) -> brackets.Allowance:
        """What an empty call costs as the judge sees it (``harness.judge.calibration``); before the import only."""
        if self._imported:
            raise RuntimeError("the exchange is calibrated before the submission is imported, never after")
        allowed = calibration.allowance(self.call, self.device, calls)
        return dataclasses.replace(allowed, via_socket=self.device == "cpu" and self.memory is None)

    def profile(self, calls: list[Callable[[], Any]], rows: int) -> str:
        """Torch's profiler table of ``calls`` (judge calls of the runner), profiled in the runner."""
        self._ask({"op": "profile"}, "profiling")
        for call in calls:
            call()
        record, _ = self._ask({"op": "profile", "rows": rows}, "profiled")
        return str(record.get("table", ""))[:100_000]

    def call(self, data: Any, timed: bool, host: bool, during: str, calibration: bool = False) -> Answer:
        """Map the runner's input buffers, then bracket: the inputs into them (or onto the socket) -> the answer."""
        request: dict[str, Any] = {
            "op": "call",
            "timed": timed,
            "host": host,
            "during": during,
            "calibration": calibration,
            "by_address": self.memory is not None,
            # on the CPU the judge asks for the guard's look after the call: run beside the answer, its ~0.5 ms
            # raced the judge's reading of the job's CPU time and came out as the call's, or not, at random
            "guard_asked": self.device == "cpu",
        }
        storages: transport.Storages = []
        try:
            request["value"] = transport.pack(data, storages)
        except transport.TransportError as exc:
            raise Verdict(
                FailureKind.INVALID_PROBLEM,
                f"The problem's input cannot be handed to the submission's "
                f"process ({exc}); tell the leaderboard's maintainers.",
            ) from None
        staged = [s for s in storages if self._staged_in_runner(s)]
        self._map_buffers(staged)  # empty buffers: nothing of this call is visible to the runner yet
        self._rebuilding_us = self.rebuild_us(data) if self.rebuild_us and not calibration else 0.0
        request["storages"] = _described(storages, self._staged_in_runner)
        blobs = transport.cpu_blobs([s for s in storages if not self._staged_in_runner(s)])
        sent = sum(len(b) for b in blobs)
        self._opening_ns = 0
        self._written = 0  # host input bytes the judge writes into the runner's memory (runner_memory)
        if self._cpu:
            self._cpu.start()
        if self.device == "cuda":
            torch.cuda.synchronize()  # the judge's own work (generating, copying the inputs) ends outside the bracket
        started = _clock_ns()  # from here on the inputs reach the runner: its work on them is inside the bracket
        try:
            staging_us = self._copy_inputs(staged)
            self.link.send(request, blobs)
            record, answer_blobs = self._receive("done", during)
            answer = self._answer(record, answer_blobs, started, staging_us, sent)
        finally:
            self._staging = []
            if self.memory is not None:
                self.memory.staging = []
        if request["guard_asked"] and (not timed or time.monotonic() - self._guarded_at >= GUARD_EVERY_S):
            self._ask({"op": "guard", "during": during}, "guarded")
            self._guarded_at = time.monotonic()
        return answer

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

    def _staged_in_runner(self, storage: torch.UntypedStorage) -> bool:
        """Whether an input storage goes into a buffer of the runner's (CUDA; host memory the judge may write),
        not onto the socket."""
        return storage.device.type == "cuda" or (storage.device.type == "cpu" and self.memory is not None)

    def _map_buffers(self, inputs: transport.Storages) -> None:
        """Buffers of the runner's for a call's inputs, mapped here (CUDA) or located (host memory) while still
        empty. The runner uses a few sets of them in turn and shares each set once (every CUDA share keeps an event
        alive in the runner for as long as the buffer lives), so a set it names again is the one this side holds."""
        if not inputs:
            return
        sizes = tuple(s.nbytes() for s in inputs)
        record, _ = self._ask({"op": "alloc", "sizes": list(sizes)}, "allocated")
        if sizes != self._mapped_sizes:
            self._mapped, self._mapped_sizes = {}, sizes
        slot, shared = record.get("slot"), record.get("storages")
        if type(slot) is not int or not 0 <= slot < MAX_BUFFER_SETS:
            raise self._tampering("it answered a request for input buffers with something else")
        if shared is not None:
            if slot in self._mapped or not isinstance(shared, list) or len(shared) != len(inputs):
                raise self._tampering("it answered a request for input buffers with something else")
            try:
                self._mapped[slot] = (
                    self.memory.buffers(shared, sizes)
                    if self.memory is not None
                    else [cuda_ipc.open_cuda(h, size=n) for h, n in zip(shared, sizes, strict=True)]
                )
            except transport.TransportError as exc:
                raise self._tampering(str(exc)) from None
        elif slot not in self._mapped:
            raise self._tampering("it named input buffers it never shared")
        self._staging = self._mapped[slot]
        if any(target.nbytes() != size for target, size in zip(self._staging, sizes, strict=True)):
            raise self._tampering("it shared input buffers of other sizes than asked for")

    def _copy_inputs(self, inputs: transport.Storages) -> float:
        """Copy the inputs into the runner's buffers and wait for it; returns the copy's time, on the judge's own
        events on CUDA, its own clock on the host (in the bracket, which started before it: the one cost the judge
        takes out of a bracket)."""
        if not inputs:
            return 0.0
        if self.memory is not None:
            self._written = sum(s.nbytes() for s in inputs)
            try:
                staging_us = self.memory.stage(self._staging, inputs)
            except transport.TransportError as exc:  # it made its memory unwritable (undumpable, unmapped, read-only)
                raise self._tampering(f"the judge could not write the call's inputs: {exc}") from None
            self._staging = []  # host buffers are the memory's to read back, never storages of this process
            return staging_us
        if self._events is None:
            self._events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        begin, end = self._events
        begin.record()
        for target, source in zip(self._staging, inputs, strict=True):
            transport.copy_into(target, source)
        end.record()
        torch.cuda.synchronize()  # the inputs are in place before the runner is told to call
        return begin.elapsed_time(end) * 1000

    def _answer(
        self,
        record: dict[str, Any],
        blobs: list[bytearray],
        started: int,
        staging_us: float,
        sent: int,
    ) -> Answer:
        described = record.get("storages")
        if not isinstance(described, list):
            raise self._tampering("it answered a call without describing its memory")
        host = iter(transport.cpu_storages(blobs))
        if sum(1 for d in described if isinstance(d, dict) and "cpu" in d) != len(blobs):
            raise self._tampering("it answered a call with memory it did not send")
        mapped: list[torch.UntypedStorage] = []
        try:
            if self.device == "cuda":
                # the fence first: once the runner's stream has passed it, its work is done and the bracket ends;
                # mapping the outputs (the driver's page-table work for hundreds of MB, 0.4-0.7 ms on an H200) is
                # the judge's own cost, so it comes after
                self._open(record.get("fence") or {}, fence=True)
                torch.cuda.synchronize()
            # the host's cost of mapping is the judge's own; the wait it queued is counted (it ends at the sync)
            bracket_us = (_clock_ns() - started - self._opening_ns) / 1000
            if self._cpu:
                self._cpu.bracket_ended()
            if self.memory is not None:
                try:
                    self.memory.check_private(described)
                except runner_memory.SharedOutput as exc:
                    raise exc.verdict() from None
            for entry in described:
                mapped.append(
                    next(host)
                    if "cpu" in entry
                    else self.memory.storage(entry)
                    if self.memory is not None
                    else self._open(entry.get("cuda") or {}, fence=False)
                    if "cuda" in entry
                    else self._staged(int(entry["staged"]))
                )
            if self.device == "cuda":
                torch.cuda.synchronize()  # any output's own event, and the mapping, before the copy home
        except (AttributeError, TypeError, KeyError, ValueError, transport.TransportError) as exc:
            raise self._tampering(f"it described its answer's memory wrongly ({exc})") from None
        # on the CPU, the CPU time of the whole job but the judge, from before the inputs reached the runner until the
        # judge has read its answer (work that goes on beside the judge's reads counts), over the cores it kept busy
        converted_us = self._conversions_us(staging_us, mapped)
        spent_us, reaped_us = (
            self._cpu.spent(bracket_us - staging_us)
            if self._cpu
            else (brackets.spent(bracket_us - staging_us - converted_us, None), 0.0)
        )
        own = [s if s.device.type == "cpu" else transport.copy_storage(s) for s in mapped]  # host ones are copies
        try:
            value = transport.unpack(record.get("value"), own)
            timing = reported_timing(record.get("timing"))
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
            # the bytes of the call: inputs sent or written, and what its host outputs reach (input buffers aside)
            sent
            + self._written
            + brackets.moved_bytes(value, self.memory.staged_addresses() if self.memory else frozenset()),
            address if isinstance(address, int) else 0,
            reaped_us,
        )

    def _conversions_us(self, staging_us: float, mapped: list[torch.UntypedStorage]) -> float:
        """A cu runner's two steps in the bracket: rebuilding the input in its module (as the judge measured it) and
        copying the output out of it (at the speed of the judge's own copy of the inputs, timed on its own events).
        Output bytes the judge's module cannot read back fail the checker, so they buy nothing."""
        staged = sum(s.nbytes() for s in self._staging)
        if not self._rebuilding_us or not staged:
            return self._rebuilding_us
        ours = {s.data_ptr() for s in self._staging}
        out = sum(s.nbytes() for s in mapped if s.device.type == "cuda" and s.data_ptr() not in ours)
        return self._rebuilding_us + staging_us * out / staged

    def _open(self, shared: dict[str, Any], fence: bool) -> torch.UntypedStorage:
        """Map runner memory for one answer. The call's fence, a byte the runner allocated after the call and shared
        last, must come with its CUDA event: the judge's stream waits on it, so everything the runner queued on its
        stream before it is done before the judge copies anything (the judge, not the runner, decides to wait). An
        output's own event is waited on too where there is one; torch sends none once 1,000 are alive (a buffer
        shared every call keeps one per share), and the fence covers it then. Mapped afresh each time and dropped
        after the copy, so the runner's allocator may reuse it."""
        if self.device != "cuda":  # else the judge of a CPU evaluation would start CUDA for the runner's description
            raise transport.TransportError("CUDA memory in an evaluation on the CPU")
        if not isinstance(shared, dict) or (fence and not shared.get("event")):
            raise transport.TransportError("an answer's fence without the event the judge waits on")
        opening = _clock_ns()
        try:
            storage = cuda_ipc.open_cuda({**shared, "event_sync": bool(shared.get("event"))})
        finally:
            self._opening_ns += _clock_ns() - opening
        if fence:
            return storage
        # torch maps a runner allocation once, so the same memory has the same addresses here: a staged input named
        # as fresh memory (the runner's own code says "staged") is that input, and the alias rules see it as one
        for staged in self._staging:
            if staged.data_ptr() == storage.data_ptr() and staged.nbytes() == storage.nbytes():
                return staged
        if cuda_ipc.overlaps(storage, self._staging):
            raise transport.TransportError("part of one of the call's input buffers described as fresh output memory")
        return storage

    def _staged(self, index: int) -> torch.UntypedStorage:
        if not 0 <= index < len(self._staging):
            raise KeyError(f"no staged buffer {index}")
        return self._staging[index]


def _described(storages: transport.Storages, staged: Callable[[torch.UntypedStorage], bool]) -> list[dict[str, int]]:
    """How the runner finds a call's input storages: ``staged`` ones in the buffers it allocated, in order; others as
    the message's blobs."""
    described, index = [], 0
    for storage in storages:
        if staged(storage):
            described.append({"staged": index})
            index += 1
        else:
            described.append({"cpu": storage.nbytes()})
    return described
