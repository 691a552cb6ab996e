"""The judge's reads and writes of a runner's host memory (harness.judge.runner_memory), against a real child
process: inputs written in, outputs read out, input buffers recognised under any name, shared memory refused."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from harness import load_problem, transport
from harness.channel import Outbox
from harness.job import EvalJob
from harness.judge import runner_memory
from harness.judge.runner_link import RunnerLink
from harness.judge.runner_memory import RemoteBuffer, RunnerMemory
from harness.transport import TransportError

SIZE = 3 * 4096
VECTORADD = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "vectoradd"


class _Child:
    """A forked process holding buffers at known addresses, parked on a pipe until the test ends."""

    def __init__(self) -> None:
        self.private = torch.zeros(SIZE, dtype=torch.uint8)
        self.output = torch.arange(SIZE, dtype=torch.int64).to(torch.uint8)
        self.shared = mmap.mmap(-1, SIZE, flags=mmap.MAP_SHARED)  # like a memfd mapped twice
        self.shared_tensor = torch.frombuffer(self.shared, dtype=torch.uint8)
        self.probe = torch.frombuffer(bytearray(transport.MEMORY_PROBE), dtype=torch.uint8)
        self._read, self._write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.read(self._read, 1)
            os._exit(0)

    def end(self) -> None:
        os.write(self._write, b"x")
        os.waitpid(self.pid, 0)


@pytest.fixture
def child() -> Iterator[_Child]:
    process = _Child()
    try:
        yield process
    finally:
        process.end()


def _memory(child: _Child) -> RunnerMemory:
    if why := runner_memory.probe(child.pid, {"address": child.probe.data_ptr()}):
        pytest.skip(f"this kernel does not let a parent read its child's memory ({why})")
    return RunnerMemory(child.pid, max_bytes=2**30)


def test_the_probe_reads_the_runners_bytes_and_refuses_a_wrong_address(child):
    _memory(child)  # skips where the kernel forbids the reads
    assert runner_memory.probe(child.pid, {"address": child.output.data_ptr()}) == "the probe read back other bytes"
    assert runner_memory.probe(child.pid, {}) == "the runner described no probe"


def test_inputs_go_in_and_outputs_and_inputs_come_back(child):
    memory = _memory(child)
    staged = [RemoteBuffer(child.private.data_ptr(), SIZE)]
    source = torch.full((SIZE,), 7, dtype=torch.uint8)
    memory.stage(staged, [source.untyped_storage()])
    back = memory.storage({"staged": 0})
    assert bytes(back) == bytes(source.numpy())
    output = memory.storage({"at": [child.output.data_ptr(), SIZE]})
    assert bytes(output) == bytes(child.output.numpy())


def test_an_input_buffer_named_as_fresh_memory_is_that_input(child):
    memory = _memory(child)
    memory.stage(
        [RemoteBuffer(child.private.data_ptr(), SIZE)], [torch.ones(SIZE, dtype=torch.uint8).untyped_storage()]
    )
    as_input = memory.storage({"staged": 0})
    as_output = memory.storage({"at": [child.private.data_ptr(), SIZE]})
    assert as_output is as_input  # one storage on the judge's side: the alias rules see the output is the input
    assert memory.staged_addresses() == frozenset({as_input.data_ptr()})
    with pytest.raises(TransportError, match="part of one of the call's input buffers"):
        memory.storage({"at": [child.private.data_ptr() + 16, 64]})


def test_memory_shared_with_another_mapping_or_unmapped_is_refused(child):
    memory = _memory(child)
    memory.stage(
        [RemoteBuffer(child.private.data_ptr(), SIZE)], [torch.ones(SIZE, dtype=torch.uint8).untyped_storage()]
    )
    memory.check_private([{"at": [child.output.data_ptr(), SIZE]}])
    with pytest.raises(TransportError, match="not private to the runner"):
        memory.check_private([{"at": [child.shared_tensor.data_ptr(), SIZE]}])
    with pytest.raises(TransportError, match="not private to the runner"):
        memory.check_private([{"at": [8, 64]}])
    with pytest.raises(TransportError, match="could not be reached"):
        memory.storage({"at": [8, 64]})


def test_malformed_descriptions_are_refused(child):
    memory = _memory(child)
    with pytest.raises(TransportError):
        memory.buffers([{"address": "0x10", "nbytes": 4}], (4,))
    with pytest.raises(TransportError):
        memory.buffers([{"address": 4096, "nbytes": 8}], (4,))
    assert memory.buffers([{"address": 0, "nbytes": 0}], (0,)) == [RemoteBuffer(0, 0)]
    with pytest.raises(TransportError, match="CUDA memory in an evaluation on the CPU"):
        memory.storage({"cuda": {}})
    with pytest.raises(TransportError):
        memory.storage({"at": [-1, 4]})


@pytest.mark.parametrize("reachable", [True, False])
def test_a_judge_that_may_not_read_the_runner_keeps_the_socket(reachable, monkeypatch, tmp_path):
    """Both exchanges of a real judge-runner pair on the CPU: by address where the probe reads the runner, through
    the socket where it may not (a kernel or sandbox that forbids process_vm_readv)."""
    if not reachable:
        monkeypatch.setattr(runner_memory, "probe", lambda pid, described: "refused for the test")
    problem = load_problem(VECTORADD)
    job = EvalJob(problem=problem, submission_name=problem.submission_name, submission_source="")
    monkeypatch.chdir(tmp_path)
    ours, theirs = os.pipe()
    link = RunnerLink.spawn(job, Outbox(theirs, "nonce"), max_bytes=2**26)
    try:
        link.start("cpu")
        if reachable and link.memory_refused:
            pytest.skip(f"this kernel does not let a parent read its child's memory ({link.memory_refused})")
        assert (link.memory is not None) is reachable
        assert link.memory_refused == ("" if reachable else "refused for the test")
        data = torch.arange(1000, dtype=torch.float32)
        answer = link.call(data, timed=True, host=False, during="a test", calibration=True)
        assert torch.equal(answer.output, data) and torch.equal(answer.inputs, data)  # a copy of the input
        assert answer.output.untyped_storage().data_ptr() != answer.inputs.untyped_storage().data_ptr()
        assert answer.spent_us > 0
    finally:
        link.close()
        os.close(ours)
        os.close(theirs)
