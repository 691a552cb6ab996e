from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=torch.Tensor)  # x: (size,) uint8
output_t = TypeVar("output_t", bound=torch.Tensor)  # counts: (256,) int32


class TestSpec(TypedDict):
    size: int
    contention: int  # percent of the elements set to one hot value
    seed: int
