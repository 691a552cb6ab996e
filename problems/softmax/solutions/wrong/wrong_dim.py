"""Wrong result: normalises over columns (dim 0) instead of rows."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return torch.softmax(data, dim=0, dtype=torch.float32).to(data.dtype)
