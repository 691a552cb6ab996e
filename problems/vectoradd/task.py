from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor])  # A, B: (size, size) float16
output_t = TypeVar("output_t", bound=torch.Tensor)  # C = A + B: (size, size) float16


class TestSpec(TypedDict):
    size: int
    seed: int
