#!kernelrank requires cuda
"""torch.compile with CUDA graphs (mode="reduce-overhead"), writing into the buffer, as public solutions do."""
import torch
from task import input_t, output_t


def _sum_into(data: input_t) -> output_t:
    x, out = data
    out[...] = x.sum()
    return out


custom_kernel = torch.compile(_sum_into, mode="reduce-overhead")
