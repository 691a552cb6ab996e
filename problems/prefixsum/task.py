from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=torch.Tensor)  # x: (size,) float32
output_t = TypeVar("output_t", bound=torch.Tensor)  # inclusive scan of x: (size,) float32


class TestSpec(TypedDict):
    size: int
    seed: int
