from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=torch.Tensor)  # x: (rows, cols), float32 (bits 32) or bfloat16 (bits 16)
output_t = TypeVar("output_t", bound=torch.Tensor)  # softmax(x, dim=-1): (rows, cols), x's dtype


class TestSpec(TypedDict):
    rows: int
    cols: int
    bits: int
    seed: int
