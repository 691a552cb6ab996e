"""Wrong output type: returns the float32 accumulator for bfloat16 inputs instead of converting back."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return torch.softmax(data, dim=-1, dtype=torch.float32)
