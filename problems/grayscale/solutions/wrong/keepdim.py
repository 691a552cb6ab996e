"""Wrong shape: keeps a channel axis of size 1, returning (size, size, 1)."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    weights = torch.tensor([0.2989, 0.5870, 0.1140], dtype=data.dtype, device=data.device)
    return (data * weights).sum(dim=-1, keepdim=True)
