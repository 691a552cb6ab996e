"""Wrong shape: returns the kernel's padded work buffer (a multiple of 1024 elements) without slicing it."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    n = data.numel()
    padded = torch.zeros((n + 1023) // 1024 * 1024, dtype=data.dtype, device=data.device)
    padded[:n] = data
    return torch.cumsum(padded, dim=0)
