"""The supervisor's watch over one running job: the child's channel, its caller, and the limits it may break.

``Watch.run`` loops until the child exits. It reads the nonce-stamped records from the channel (nothing is
ever read from stdout), answers seed requests (``harness.seeds``) and load_inline builds (``harness.builds.builder``),
forwards progress, takes the run's key from the caller, and stops the job on a wall-clock timeout, on too much
memory or too many processes across all the job's processes (or the first fork its cgroup refused,
``harness.isolation.cgroups``), on an output flood, or on a record the harness did not write (``harness.host.breaches``
words each). What it read becomes the job's ``Ending`` (``harness.host.assembly``).
"""

from __future__ import annotations

import base64
import logging
import os
import selectors
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.builds import build, toolchain
from harness.builds.build import BuildOutcome
from harness.builds.builder import BUILDS_PER_JOB, BuildProcess, Builds
from harness.channel import ChannelError, RecordReader, encode
from harness.codec import DecodeError, from_jsonable, to_jsonable
from harness.host import breaches
from harness.host.assembly import Ending
from harness.isolation import cgroups, processes
from harness.isolation.sandbox import Launch
from harness.job import EvalJob
from harness.liveness import Liveness, Phase, first_phase
from harness.result import Failure, FailureKind, Mode, Progress
from harness.seeds import SeedRefused, SeedSource

log = logging.getLogger(__name__)

POLL_S = 0.05  # how often limits are checked while the child runs
KILL_WAIT_S = 10.0  # a killed child that is still not gone after this is abandoned
DRAIN_S = 1.0  # reading what is left in the channel after the child ended
MEMORY_CHECK_S = 0.1  # how often the memory meter measures the job
REPLY_TIMEOUT_S = 30.0  # sending a built module to the worker

Emit = Callable[[dict[str, Any]], None]


class Caller(Protocol):
    """The harness server's link to its caller: cancellation (it goes away) and the ranked run's key."""

    def fileno(self) -> int: ...

    def receive(self) -> list[dict[str, Any]] | None:
        """Records that arrived (``{"op": "key", "key": hex}``); None once the caller is gone."""


@dataclass
class Watch:
    """One job's run, seen from outside; ``run`` returns once its child has ended."""

    job: EvalJob
    launch: Launch
    pid: int
    channel: socket.socket
    nonce: str
    seeds: SeedSource
    meter: processes.MemoryMeter
    emit: Emit
    caller: Caller | None
    builds: Builds
    zygote: int  # below the server, but no job's
    group: cgroups.JobGroup | None  # the job's cgroup, where the host gives it one
    ending: Ending = field(default_factory=Ending)
    reader: RecordReader = field(default_factory=RecordReader)
    waiting: deque[dict[str, Any]] = field(default_factory=deque)  # seed requests before the key came
    leftovers: int = 0
    building: BuildProcess | None = None  # a load_inline build the worker waits for
    liveness: Liveness | None = None

    def run(self) -> Ending:
        task, mode = self.job.problem.task, self.job.mode
        self.liveness = Liveness(
            first_phase(task, mode), self.emit, next_phase=Phase.of(task, "ranked") if mode is Mode.RANKED else None
        )
        killed_at: float | None = None
        selector = selectors.DefaultSelector()
        selector.register(self.channel, selectors.EVENT_READ, "child")
        if self.caller is not None:
            selector.register(self.caller.fileno(), selectors.EVENT_READ, "caller")
        while True:
            for key, _ in selector.select(POLL_S):
                if key.data == "child" and not self._read():
                    selector.unregister(self.channel)
                elif key.data == "caller":
                    self._from_caller(selector)
            if self.building is not None and self.building.poll() is not None:
                self._built(self.builds.finish(self.building))
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.ending.exit_status = status
                break
            if self.group is not None and self.ending.stopped_for is None:
                self._check_group(self.group)  # before the walk of /proc, which a fork bomb slows down
            table = processes.snapshot()
            processes.reap_children(os.getpid(), keep=self.pid, table=table)  # orphans the server inherited
            if self.ending.stopped_for is None:
                self._check_limits(table)
            elif killed_at is None:
                killed_at = time.monotonic()
            elif time.monotonic() - killed_at > KILL_WAIT_S:
                log.error("child %d did not die after SIGKILL; abandoning it", self.pid)
                break
        processes.kill(self.pid)
        if self.caller is not None and self.caller.fileno() in selector.get_map():
            selector.unregister(self.caller.fileno())
        self._drain(selector)
        self._check_flood()
        return self.ending

    def _from_caller(self, selector: selectors.BaseSelector) -> None:
        assert self.caller is not None
        records = self.caller.receive()
        if records is None:
            selector.unregister(self.caller.fileno())
            self._stop(Failure(FailureKind.HARNESS_ERROR, "The evaluation was cancelled: its caller went away."))
            return
        for record in records:
            if record.get("op") == "key" and not self.seeds.ready:
                try:
                    self.seeds.set_key(str(record.get("key")))
                except ValueError:
                    log.error("the caller sent a malformed run key")
                    continue
                while self.waiting:
                    self._answer(self.waiting.popleft())

    def _read(self) -> bool:
        """Take what the channel holds; False at end of file."""
        try:
            chunk = self.channel.recv(1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
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
        kind = record.get("t")
        if record.get("nonce") != self.nonce:
            self._forged("a record without this run's nonce")
        elif kind == "sandbox":  # the sandbox's own last word: what it killed when the worker ended
            self.leftovers = int(record.get("leftovers") or 0)
        elif self.ending.final:
            self._forged("a record after the final one")
        elif kind == "seed" and not self.seeds.ready:
            self.waiting.append(record)
        elif kind == "seed":
            self._answer(record)
        elif kind == "build":
            self._build(record)
        elif kind == "progress":
            try:
                progress = to_jsonable(from_jsonable(Progress, record.get("progress")))
            except DecodeError:
                self._forged("a malformed progress record")
                return
            self.ending.last_progress = progress
            if self.liveness is not None:
                self.liveness.saw(progress)
            self.emit({"t": "progress", "progress": progress})
        elif kind == "final":
            self.ending.final = True
        else:
            self.ending.records.append(record)

    def _answer(self, request: dict[str, Any]) -> None:
        try:
            seed = self.seeds.answer(request.get("spec"), request.get("call"))
        except SeedRefused as exc:
            log.warning("run %s: seed request refused: %s", self.job.run_id, exc)
            self._stop(
                Failure(
                    FailureKind.TAMPERING,
                    f"The evaluation asked for {exc}, which the harness never does, "
                    "so it was stopped. Inputs are handed out one at a time, when they are used.",
                )
            )
            return
        try:
            self.channel.sendall(encode({"seed": seed}))
        except (BlockingIOError, OSError):
            self._stop(
                Failure(FailureKind.TAMPERING, "The evaluation stopped reading its private channel, so it was stopped.")
            )

    def _build(self, record: dict[str, Any]) -> None:
        """A load_inline call of the worker: build it outside the job (or find it in the cache) and answer."""
        arch = toolchain.gpu_arch()
        arguments = record.get("arguments")
        request = (
            build.extension_request(arguments, arch.sm, self.job.problem.files)
            if isinstance(arguments, dict) and arch is not None
            else None
        )
        if request is None or self.building is not None or self.builds.started >= BUILDS_PER_JOB:
            self._reply({"declined": True})  # the worker builds it itself, in its own folders
            return
        self.emit({"t": "progress", "progress": {"stage": "compiling", "index": 0, "total": 0, "detail": ""}})
        started = self.builds.start(request, build.compile_timeout_s())
        if isinstance(started, BuildOutcome):
            self._built(started)
        else:
            self.building = started

    def _built(self, outcome: BuildOutcome) -> None:
        self.building = None
        if outcome.ok:
            self._reply({"files": {name: base64.b64encode(data).decode() for name, data in outcome.files.items()}})
        else:
            self._reply({"error": outcome.message, "log": outcome.log[-build.LOG_CHARS :]})

    def _reply(self, record: dict[str, Any]) -> None:
        """A large answer (a built module) to a worker that is waiting for it: blocking, with a deadline."""
        try:
            self.channel.settimeout(REPLY_TIMEOUT_S)
            self.channel.sendall(encode(record))
        except OSError:
            self._stop(
                Failure(FailureKind.TAMPERING, "The evaluation stopped reading its private channel, so it was stopped.")
            )
        finally:
            self.channel.setblocking(False)

    def _forged(self, what: str) -> None:
        log.warning("result channel of child %d: %s", self.pid, what)
        self._stop(
            Failure(
                FailureKind.TAMPERING,
                "The private result channel received a record the harness did not "
                "write, so the evaluation was stopped. Submissions must not write "
                "to the harness's descriptors.",
            )
        )

    def _stop(self, failure: Failure) -> None:
        if self.ending.stopped_for is None:
            self.ending.stopped_for = failure
            processes.kill(self.pid)
            if self.group is not None:
                self.group.kill(wait_s=0)  # every process of the job now: a fork bomb stops forking at once

    def _check_group(self, group: cgroups.JobGroup) -> None:
        if (failure := breaches.kernel_refused(group, self.launch.limits, self.ending.where())) is not None:
            self._stop(failure)

    def _check_limits(self, table: dict[int, processes.Process]) -> None:
        where, limits = self.ending.where(), self.launch.limits
        if self.liveness is not None and (late := self.liveness.check()) is not None:
            self._stop(late)
            return
        failure = None
        if self.group is None:  # else the kernel counts the job (_check_group): one rule, one message
            failure = breaches.too_many_tasks(processes.usage(os.getpid(), table, spare=self.zygote), limits, where)
        failure = failure or breaches.too_much_memory(self.meter.latest_bytes, limits, where)
        if failure is not None:
            self._stop(failure)
        else:
            self._check_flood()

    def _check_flood(self) -> None:
        if (failure := breaches.flooded(self.launch.stage, self.ending.where())) is not None:
            self.ending.stopped_for = None  # a flood outranks whatever it caused (a failed write reads as an exception)
            self._stop(failure)

    def _drain(self, selector: selectors.BaseSelector) -> None:
        """Read the records still in the channel once the child is gone."""
        until = time.monotonic() + DRAIN_S
        while self.channel in selector.get_map() and time.monotonic() < until:
            if selector.select(max(0.0, until - time.monotonic())) and not self._read():
                selector.unregister(self.channel)
        if self.reader.partial and self.ending.stopped_for is None:
            self._forged("a record cut off in the middle")
        selector.close()
