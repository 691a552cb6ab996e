"""Wrong result: an off-by-one index, out[i] = x[i + 1] (wrapping at the end)."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return torch.roll(data, shifts=-1)
