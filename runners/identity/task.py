from typing import TypedDict

import torch

input_t = tuple[torch.Tensor, torch.Tensor]  # the vector, and the output buffer
output_t = torch.Tensor


class TestSpec(TypedDict):
    size: int
    seed: int
