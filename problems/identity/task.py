from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=torch.Tensor)  # x: (size,) float32
output_t = TypeVar("output_t", bound=torch.Tensor)  # a new (size,) float32 tensor equal to x


class TestSpec(TypedDict):
    size: int
    seed: int
