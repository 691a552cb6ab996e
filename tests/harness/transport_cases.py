"""Values as a checker may get them, one builder per case (tests/harness/test_transport_fidelity.py): built the
same way in the sending process (transport_peer.py) and in the test, which compares what crossed with its own."""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import Any

import torch

from harness import transport

Pair = collections.namedtuple("Pair", "left right")  # a problem's own result class


def _square(device: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(7)
    return torch.randn(6, 6, generator=gen, dtype=torch.float64).to(device)


def _bytes_as(dtype: torch.dtype, device: str) -> torch.Tensor:
    """Every byte value once, seen as ``dtype`` (no arithmetic: float8 and bit types have little of it)."""
    return torch.arange(256, dtype=torch.uint8).to(device).view(dtype).reshape(4, -1)


def _shared_views(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    base = torch.arange(24, dtype=torch.float32, device=device)
    return base[2:14].view(3, 4), base.view(4, 6).t()


CASES: dict[str, Callable[[str], Any]] = {
    "geqrf": lambda d: torch.geqrf(_square(d)),
    "sort": lambda d: torch.sort(_square(d), dim=1),
    "max_dim": lambda d: torch.max(_square(d), dim=0),
    "topk": lambda d: torch.topk(_square(d), 3),
    "linalg_qr": lambda d: torch.linalg.qr(_square(d)),
    "linalg_eigh": lambda d: torch.linalg.eigh(_square(d) @ _square(d).T),
    "linalg_slogdet": lambda d: torch.linalg.slogdet(_square(d)),
    "aminmax": lambda d: torch.aminmax(_square(d)),
    "problem_namedtuple": lambda d: Pair(_square(d), (1, 2.5)),
    "torch_size": lambda d: {"shape": _square(d)[:2].shape},
    "nested": lambda d: {
        "pairs": [(_square(d)[0], None), [True, False]],
        7: {"deep": ((("leaf",),),), "sort": torch.sort(_square(d)[1])},
        "empty": ((), [], {}),
    },
    "python_numbers": lambda d: (0, -(2**70), 3.25, float("inf"), -0.0, True, 2 - 3.5j, None, "text"),
    "zero_dim": lambda d: torch.tensor(3.5, device=d),
    "transposed": lambda d: _square(d).t(),
    "every_other": lambda d: _square(d)[::2, 1::3],
    "offset_view": lambda d: _square(d).flatten()[5:17].view(3, 4),
    "expanded": lambda d: torch.arange(3.0, device=d).expand(4, 3),
    "channels_last": lambda d: (
        torch.arange(48.0, device=d).view(1, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    ),
    "empty": lambda d: torch.empty(0, 3, device=d),
    "shared_memory": _shared_views,
    "conj_view": lambda d: torch.tensor([1 + 2j, 3 - 4j], device=d).conj(),
    "neg_view": lambda d: torch.tensor([1 + 2j, 3 - 4j], device=d).conj().imag,
    **{f"dtype_{name}": functools.partial(_bytes_as, dtype) for name, dtype in transport.DTYPES.items()},
}


def assert_same(got: Any, want: Any, where: str = "value") -> None:
    """``got`` is what a checker in one process would have seen as ``want``: the same types all the way down,
    tensors with the same dtype, device type, shape, strides, offset, view bits and bytes."""
    assert type(got) is type(want), f"{where}: {type(got)} where {type(want)} was sent"
    if isinstance(want, torch.Tensor):
        seen = (got.dtype, got.device.type, got.shape, got.stride(), got.storage_offset(), got.is_conj(), got.is_neg())
        sent = (want.dtype, want.device.type, want.shape, want.stride(), want.storage_offset(), want.is_conj())
        assert seen[:-1] == sent and got.is_neg() == want.is_neg(), f"{where}: {seen} where {sent} was sent"
        assert _storage_bytes(got) == _storage_bytes(want), f"{where}: other bytes"
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want), f"{where}: {len(got)} items where {len(want)} were sent"
        for index, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_same(a, b, f"{where}[{index}]")
    elif isinstance(want, dict):
        assert list(got) == list(want), f"{where}: keys {list(got)} where {list(want)} were sent"
        for key in want:
            assert_same(got[key], want[key], f"{where}[{key!r}]")
    else:
        assert got == want or (got != got and want != want), f"{where}: {got!r} where {want!r} was sent"


def _storage_bytes(tensor: torch.Tensor) -> bytes:
    storage = tensor.untyped_storage()
    return bytes(torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage).cpu().numpy())
