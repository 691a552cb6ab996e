"""Wrong result: skips the last, partial k-block of 64 (a loop bound of k // 64 instead of cdiv(k, 64))."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    whole = a.shape[1] // 64 * 64
    if whole == 0:
        return torch.zeros(a.shape[0], b.shape[1], dtype=torch.bfloat16, device=a.device)
    return torch.matmul(a[:, :whole], b[:whole])
