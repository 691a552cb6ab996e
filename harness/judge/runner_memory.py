"""The runner's host memory as the judge reaches it on the CPU: inputs written in, answers read out, by the kernel.

On the CPU the job's CPU time is the judge's measure of a call (``harness.judge.judge_clock``), so bytes the runner
moved through the socket (unpacking inputs, packing the answer) were time the judge could not tell from the
kernel's: 0.3-1.7 ms of an honest call, against kernels of 30-150 us, so a lie of that size passed. Here the runner
only says where its memory is; the judge writes each call's inputs into buffers the runner allocated
(``process_vm_writev``, after its clock started) and reads the output and the inputs as the call left them
(``process_vm_readv``). The kernel does the copying on the judge's account, so what the job spends in the bracket is
the call, plus a small fixed exchange the calibration measures.

What the runner says is checked, never believed:

* every range must lie in private, writable memory of the runner (``/proc/<runner>/maps``): a buffer mapped twice
  (a shared memfd) would let an output be an input under another address;
* an output that is one of the call's input buffers is that input, so the alias rules see it; a part of one named
  as fresh memory is tampering;
* sizes are bounded by the link's limit, and a read the kernel refuses (an address not mapped) is tampering.

Where the judge may not read the runner (a kernel or sandbox that forbids it), ``probe`` says why and the link
keeps the socket exchange, with the wider CPU slack (``harness.judge.brackets``).
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from harness.failures import Verdict
from harness.isolation import linux
from harness.result import FailureKind
from harness.transport import MEMORY_PROBE, TransportError


class SharedOutput(TransportError):
    """An answer's own memory (not an input buffer) outside the runner's private writable memory: an honest kernel
    may return a tensor of a process pool's shared memory, so this is the output's fault, not forgery."""

    def verdict(self) -> Verdict:
        return Verdict(
            FailureKind.BAD_OUTPUT_TYPE,
            f"The call answered with {self}: the judge reads outputs only from the submission process's own memory. "
            "Return a tensor of its own (e.g. a .clone() of a shared-memory buffer).",
        )


@dataclass(frozen=True)
class RemoteBuffer:
    """One of the runner's input buffers, where it lives there; reads like a storage's size and address."""

    address: int
    size: int

    def nbytes(self) -> int:
        return self.size

    def data_ptr(self) -> int:
        return self.address


def probe(pid: int, described: Any) -> str | None:
    """Why the judge cannot use the runner's memory (None when it can): ``described`` is the runner's "ready"
    message's probe, where it keeps ``MEMORY_PROBE``; sent before any code of the submission has run."""
    if not isinstance(described, dict) or type(described.get("address")) is not int:
        return "the runner described no probe"
    into = torch.empty(len(MEMORY_PROBE), dtype=torch.uint8)
    try:
        linux.read_process_memory(pid, described["address"], into.data_ptr(), len(MEMORY_PROBE))
    except OSError as exc:
        return f"process_vm_readv: {exc.strerror or exc}"
    return None if bytes(into.numpy()) == MEMORY_PROBE else "the probe read back other bytes"


class RunnerMemory:
    """The judge's reads and writes of one runner's memory for one call at a time."""

    def __init__(self, pid: int, max_bytes: int) -> None:
        self.pid = pid
        self.max_bytes = max_bytes
        self.staging: list[RemoteBuffer] = []  # the call's input buffers, in the runner
        self._read: dict[int, torch.UntypedStorage] = {}  # staged buffers already read for this answer

    def buffers(self, shared: Any, sizes: tuple[int, ...]) -> list[RemoteBuffer]:
        """The runner's answer to a request for input buffers of ``sizes``, checked."""
        if not isinstance(shared, list) or len(shared) != len(sizes):
            raise TransportError("input buffers of another count than asked for")
        found = []
        for entry, size in zip(shared, sizes, strict=True):
            address = entry.get("address") if isinstance(entry, dict) else None
            if type(address) is not int or address < (1 if size else 0) or entry.get("nbytes") != size:
                raise TransportError("an input buffer described without its address and size")
            found.append(RemoteBuffer(address, size))
        return found

    def stage(self, buffers: list[RemoteBuffer], inputs: list[torch.UntypedStorage]) -> float:
        """Write the call's inputs into the runner's buffers; returns the judge's wall time for it, in us."""
        self.staging, self._read = buffers, {}
        started = time.perf_counter_ns()
        for target, source in zip(buffers, inputs, strict=True):
            self._move(linux.write_process_memory, target.address, source.data_ptr(), source.nbytes())
        return (time.perf_counter_ns() - started) / 1000

    def check_private(self, entries: list[Any]) -> None:
        """Every range the answer names, and every input buffer, in private writable memory of the runner."""
        ranges = [(b.address, b.size) for b in self.staging]
        ranges += [_range(e["at"]) for e in entries if isinstance(e, dict) and "at" in e]
        if sum(size for _, size in ranges) > self.max_bytes * 2:
            raise TransportError("an answer that names more memory than the link carries")
        try:
            mappings = _mappings(self.pid)
        except (OSError, ValueError) as exc:
            raise TransportError(f"its memory map could not be read ({exc})") from None
        starts = [start for start, _, _ in mappings]
        for index, (address, size) in enumerate(ranges):
            if size and not _private(mappings, starts, address, address + size):
                where = f"memory at {address:#x} ({size} bytes) that is not private to the runner (shared, unmapped or "
                # the input buffers are the harness's own allocations: only a forged answer puts them elsewhere
                raise (TransportError if index < len(self.staging) else SharedOutput)(f"{where}read-only)")

    def storage(self, entry: Any) -> torch.UntypedStorage:
        """The judge's own copy of one storage the answer names: an input buffer ("staged") or other memory
        ("at"), read now."""
        if "staged" in entry:
            return self.staged(int(entry["staged"]))
        if "at" not in entry:
            raise TransportError("CUDA memory in an evaluation on the CPU" if "cuda" in entry else "unknown memory")
        address, size = _range(entry["at"])
        for index, buffer in enumerate(self.staging):
            if (address, size) == (buffer.address, buffer.size):
                return self.staged(index)  # the input itself, under another name: the alias rules must see it
            if address < buffer.address + buffer.size and buffer.address < address + size:
                raise TransportError("part of one of the call's input buffers described as fresh output memory")
        return self._copy(address, size)

    def staged_addresses(self) -> frozenset[int]:
        """Where this side holds its copies of the input buffers the answer named."""
        return frozenset(s.data_ptr() for s in self._read.values())

    def staged(self, index: int) -> torch.UntypedStorage:
        if not 0 <= index < len(self.staging):
            raise KeyError(f"no staged buffer {index}")
        if index not in self._read:
            self._read[index] = self._copy(self.staging[index].address, self.staging[index].size)
        return self._read[index]

    def _copy(self, address: int, size: int) -> torch.UntypedStorage:
        into = torch.empty(size, dtype=torch.uint8)
        self._move(linux.read_process_memory, address, into.data_ptr(), size)
        return into.untyped_storage()

    def _move(self, how: Any, remote: int, local: int, size: int) -> None:
        try:
            how(self.pid, remote, local, size)
        except OSError as exc:
            raise TransportError(f"its memory at {remote:#x} could not be reached ({exc.strerror or exc})") from None


def _range(described: Any) -> tuple[int, int]:
    if not (isinstance(described, list) and len(described) == 2 and all(type(n) is int and n >= 0 for n in described)):
        raise TransportError("memory described without an address and a size")
    return described[0], described[1]


def _mappings(pid: int) -> list[tuple[int, int, bool]]:
    """(start, end, private and writable) of every mapping of ``pid``, in address order."""
    found = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        span, perms = line.split(maxsplit=2)[:2]
        start, _, end = span.partition("-")
        found.append((int(start, 16), int(end, 16), perms[1] == "w" and perms[3] == "p"))
    return found


def _private(mappings: list[tuple[int, int, bool]], starts: list[int], begin: int, end: int) -> bool:
    """Whether [begin, end) is covered, without a gap, by private writable mappings."""
    index = bisect.bisect_right(starts, begin) - 1
    at = begin
    while at < end:
        if index < 0 or index >= len(mappings):
            return False
        start, stop, private = mappings[index]
        if not (start <= at < stop and private):
            return False
        at, index = stop, index + 1
    return True
