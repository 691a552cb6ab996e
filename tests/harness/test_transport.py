"""Values between the judge and the runner (harness.transport): what crosses, and what is refused."""

from __future__ import annotations

import base64
import collections
import socket

import pytest
import torch

from harness import cuda_ipc, transport


def _round_trip(value, rebuild_classes=False):
    storages: transport.Storages = []
    meta = transport.pack(value, storages)
    copies = transport.cpu_storages([bytearray(b) for b in transport.cpu_blobs(storages)])
    return transport.unpack(meta, copies, rebuild_classes)


def test_nested_values_cross_and_shared_memory_stays_shared():
    a = torch.arange(12, dtype=torch.float32)
    view = a[2:8].view(2, 3)
    back = _round_trip({"a": a, "view": view, "pair": (1, 2.5, None, "x"), "dtype": torch.float16})
    assert torch.equal(back["a"], a) and torch.equal(back["view"], view)
    assert back["pair"] == (1, 2.5, None, "x") and back["dtype"] is torch.float16
    back["a"][3] = -1  # one storage on the other side too
    assert back["view"][0, 1] == -1


Pair = collections.namedtuple("Pair", "left right")


def test_namedtuples_come_back_as_their_class_only_where_asked():
    pair = Pair(torch.ones(2), torch.zeros(2))
    assert type(_round_trip(pair)) is tuple
    assert type(_round_trip(pair, rebuild_classes=True)) is Pair
    assert transport.unpack({"namedtuple": ["os", "system"], "items": []}, []) == ()  # the judge imports nothing


class Lazy(torch.Tensor):
    pass


@pytest.mark.parametrize("value", [torch.ones(2).as_subclass(Lazy), object(), {(1, 2): 3}])
def test_what_cannot_be_checked_is_refused(value):
    with pytest.raises(transport.TransportError):
        transport.pack(value, [])


@pytest.mark.parametrize(
    "meta",
    [
        {"tensor": {"storage": 0, "offset": 0, "size": [100], "stride": [1], "dtype": "float32"}},
        {"tensor": {"storage": 5, "offset": 0, "size": [1], "stride": [1], "dtype": "float32"}},
        {"dtype": "os"},
        {"value": [1, 2]},
        "tuple",
    ],
)
def test_malformed_descriptions_are_refused(meta):
    storage = torch.zeros(4, dtype=torch.uint8).untyped_storage()
    with pytest.raises(transport.TransportError):
        transport.unpack(meta, [storage])


def test_a_link_refuses_more_bytes_than_allowed():
    ours, theirs = socket.socketpair()
    sender, receiver = transport.Link(ours, 1 << 20), transport.Link(theirs, 16)
    sender.send({"t": "done"}, [b"x" * 17])
    with pytest.raises(transport.TransportError):
        receiver.receive(timeout_s=5)
    ours.close()
    theirs.close()


def _described(**changes):
    """A CUDA IPC description as share_cuda writes it, with ``changes``."""
    described = {
        "device": 0,
        "handle": base64.b64encode(b"\x00" + bytes(64)).decode(),
        "size": 4096,
        "offset": 512,
        "counter": base64.b64encode(b"/torch_4021_1887873266_3").decode(),
        "counter_offset": 7,
        "event": base64.b64encode(bytes(64)).decode(),
        "event_sync": True,
    }
    return {**described, **changes}


def test_a_cuda_description_as_torch_writes_it_is_accepted():
    fields = cuda_ipc.checked_cuda_description(_described(), 0, 4096)
    assert fields[2:6] == (4096, 512, b"/torch_4021_1887873266_3", 7) and len(fields[6]) == 64


@pytest.mark.parametrize(
    ("changes", "size"),
    [
        ({"size": 4097}, 4096),  # not the staging buffer the judge asked for
        ({"size": True}, None),  # a bool is not a count
        ({"offset": 512.0}, None),
        ({"offset": -512}, None),
        ({"offset": 1 << 64}, None),
        ({"device": 1}, None),  # another device than the evaluation's
        ({"counter_offset": 10_000}, None),  # past the reference counter file: a write into the judge
        ({"counter_offset": -1}, None),
        ({"counter": base64.b64encode(b"/../../dev/shm/judge").decode()}, None),
        ({"counter": base64.b64encode(b"/torch_1_2_3\n").decode()}, None),
        ({"event": base64.b64encode(bytes(63)).decode()}, None),
        ({"handle": ""}, None),
        ({"handle": "not base64!"}, None),
        ({"handle": None}, None),
        ({"event_sync": 1}, None),
        ({"extra": 0}, None),
    ],
)
def test_a_cuda_description_outside_what_the_judge_expects_is_refused(changes, size):
    with pytest.raises(transport.TransportError):
        cuda_ipc.checked_cuda_description(_described(**changes), 0, size)


@pytest.mark.parametrize("shared", [None, [], {"device": 0}])
def test_a_cuda_description_that_is_not_one_is_refused(shared):
    with pytest.raises(transport.TransportError):
        cuda_ipc.checked_cuda_description(shared, 0, None)


def test_a_record_nested_past_what_json_can_read_is_refused():
    ours, theirs = socket.socketpair()
    body = b"[" * 20_000 + b"]" * 20_000  # past the interpreter's recursion limit, within a socket buffer
    ours.sendall(len(body).to_bytes(4, "big") + body)
    with pytest.raises(transport.TransportError):
        transport.Link(theirs, 16).receive(timeout_s=5)
    ours.close()
    theirs.close()


class _Span:
    """Memory at an address, as ``cuda_ipc.overlaps`` reads a storage: the judge's mapping of part of an allocation."""

    def __init__(self, address: int, size: int) -> None:
        self.address, self.size = address, size

    def data_ptr(self) -> int:
        return self.address

    def nbytes(self) -> int:
        return self.size


def test_output_memory_that_is_an_input_buffer_is_found():
    """A runner that names one of the call's staged input buffers (or a part of it) as fresh output memory hides an
    alias of the input: the judge maps an allocation once, so the same memory has the same addresses."""
    staged = torch.zeros(1024, dtype=torch.uint8).untyped_storage()
    elsewhere = torch.zeros(1024, dtype=torch.uint8).untyped_storage()
    assert cuda_ipc.overlaps(staged, [elsewhere, staged])
    assert not cuda_ipc.overlaps(elsewhere, [staged])
    assert cuda_ipc.overlaps(_Span(1512, 256), [_Span(1000, 1024)])  # a part of it
    assert not cuda_ipc.overlaps(_Span(2024, 256), [_Span(1000, 1024)])  # right after it: the next block
    assert not cuda_ipc.overlaps(torch.UntypedStorage(0), [staged])  # nothing has no address
