from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor])  # A: (m, k), B: (k, n), bfloat16
output_t = TypeVar("output_t", bound=torch.Tensor)  # C = A @ B: (m, n) bfloat16


class TestSpec(TypedDict):
    m: int
    n: int
    k: int
    seed: int
