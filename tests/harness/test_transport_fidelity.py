"""Values cross from a runner-like process to the judge as the checker would see them in one process (issue 26),
and the judge decodes only from its fixed tables (issue 25).

The table (transport_cases.CASES) holds torch's named results, a problem's namedtuple, nested containers, Python
numbers, 0-d, strided, offset, expanded, shared and conjugate views, and every dtype of the installed torch. Each
case crosses the real link from another process (transport_peer.py). CUDA rows need a GPU:
``pytest -m cuda tests/harness/test_transport_fidelity.py``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transport_cases
from transport_cases import CASES, assert_same

from harness import EvalJob, FailureKind, Status, cuda_ipc, load_problem, transport

HERE = Path(__file__).resolve().parent
NEEDS_CUDA = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


class Peer:
    """A sending process and the judge's end of its link."""

    def __init__(self, device: str) -> None:
        ours, theirs = socket.socketpair()
        path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "transport_peer.py"), str(theirs.fileno()), device],
            pass_fds=(theirs.fileno(),),
            env={**os.environ, "PYTHONPATH": path},
        )
        theirs.close()
        self.link = transport.Link(ours, 1 << 30)

    def receive(self, case: str):
        """The case as the judge holds it: memory mapped or received, copied into its own, decoded."""
        self.link.send({"case": case})
        record, blobs = self.link.receive(timeout_s=120)
        host = iter(transport.cpu_storages(blobs))
        own = [
            next(host) if "cpu" in entry else transport.copy_storage(cuda_ipc.open_cuda(entry["cuda"]))
            for entry in record["storages"]
        ]
        return transport.unpack(record["value"], own)

    def close(self) -> None:
        self.link.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def peers():
    transport.allow_namedtuples(vars(transport_cases))  # as the judge does with the reference module's globals
    started: dict[str, Peer] = {}
    yield lambda device: started.setdefault(device, Peer(device))
    for peer in started.values():
        peer.close()


ROWS = [pytest.param(case, "cpu", id=f"cpu-{case}") for case in CASES] + [
    pytest.param(case, "cuda", id=f"cuda-{case}", marks=NEEDS_CUDA) for case in CASES
]


@pytest.mark.parametrize(("case", "device"), ROWS)
def test_a_value_arrives_as_the_checker_would_see_it(case, device, peers):
    got = peers(device).receive(case)
    assert_same(got, CASES[case](device))


@pytest.mark.parametrize("field", ["offset", "size"])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_memory_described_past_its_allocation_is_refused(field, peers):
    """An offset or size the runner inflates would map other memory of the judge's (issue 25)."""
    peer = peers("cuda")
    peer.link.send({"case": "transposed"})
    record, _ = peer.link.receive(timeout_s=120)
    shared = record["storages"][0]["cuda"]
    with pytest.raises(transport.TransportError):
        cuda_ipc.open_cuda({**shared, field: shared[field] + (1 << 30)})


def test_torch_named_results_keep_their_class_for_the_checker():
    got = _round_trip(torch.geqrf(torch.eye(3)))
    assert type(got) is torch.return_types.geqrf and isinstance(got, tuple)
    assert torch.equal(got.tau, torch.geqrf(torch.eye(3)).tau)


def test_shared_memory_stays_shared():
    first, second = _round_trip(transport_cases._shared_views("cpu"))
    first[0, 0] = -1
    assert second[2, 0] == -1


@pytest.mark.parametrize("name", ["onnx", "_dynamo", "testing", "os", "nn", "float32 ", "Tensor", 3, None])
def test_a_dtype_name_outside_the_table_is_refused(name):
    with pytest.raises(transport.TransportError):
        transport.unpack({"dtype": name}, [])


def test_decoding_a_name_imports_nothing():
    """The red team's route (issue 25): a dtype name that made the old ``getattr(torch, name)`` import a lazy
    torch submodule. In a fresh process, so that no other test imported it first."""
    script = (
        "import sys, torch\n"
        "from harness import transport\n"
        "before = set(sys.modules)\n"
        "for name in ('onnx', '_dynamo', 'export', 'compiler', 'fx'):\n"
        "    for meta in ({'dtype': name}, {'namedtuple': ['torch.' + name, 'x'], 'items': []}):\n"
        "        try:\n"
        "            transport.unpack(meta, [])\n"
        "        except transport.TransportError:\n"
        "            pass\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize(
    "meta",
    [
        {"namedtuple": ["torch.return_types", "geqrf"], "items": [{"value": 1}]},  # a field short
        {"namedtuple": "torch.return_types.geqrf", "items": []},
        {"tensor": {"storage": 0, "offset": 0, "size": [2], "stride": [1], "dtype": "float32", "extra": 1}},
        {"tensor": {"storage": 0, "offset": 0, "size": [True], "stride": [1], "dtype": "uint8"}},
        {"tensor": {"storage": 0, "offset": 0.0, "size": [1], "stride": [1], "dtype": "uint8"}},
        {"tensor": {"storage": 0, "offset": 0, "size": [2], "stride": [1], "dtype": "qint8"}},
        {"complex": [1, "2"]},
        {"dict": [[1.5, {"value": 1}]]},
    ],
)
def test_descriptions_outside_the_format_are_refused(meta):
    storage = torch.zeros(4, dtype=torch.uint8).untyped_storage()
    with pytest.raises(transport.TransportError):
        transport.unpack(meta, [storage])


def test_named_tuples_of_unknown_classes_come_back_as_plain_tuples():
    for where in (["torch.return_types", "__class__"], ["builtins", "tuple"], ["os", "system"]):
        assert transport.unpack({"namedtuple": where, "items": [{"value": 1}]}, []) == (1,)


def _round_trip(value):
    storages: transport.Storages = []
    meta = transport.pack(value, storages)
    return transport.unpack(meta, transport.cpu_storages([bytearray(b) for b in transport.cpu_blobs(storages)]))


STRUCTURED = HERE.parent / "fixtures" / "harness" / "structured"


@pytest.fixture(scope="module")
def structured():
    return load_problem(STRUCTURED)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=NEEDS_CUDA)])
def test_a_checker_that_demands_exact_types_passes_its_reference(device, structured, harness_server):
    """A real evaluation: the checker compares types all the way down (the problem's namedtuple included),
    strides and the conjugate bit."""
    result = harness_server.evaluate(_job(structured, "as_reference", device))
    assert result.status is Status.PASSED, result.failure


def test_the_problems_namedtuple_is_not_a_plain_tuple(structured, harness_server):
    result = harness_server.evaluate(_job(structured, "plain_stats", "cpu"))
    assert result.status is Status.FAILED and result.failure.kind is FailureKind.WRONG_OUTPUT
    assert "output['stats'] is a tuple, not a Stats" in result.failure.message, result.failure


def _job(problem, solution, device):
    source = (STRUCTURED / "solutions" / f"{solution}.py").read_text()
    return EvalJob(problem=problem, submission_name="submission.py", submission_source=source, device=device)
