#!kernelrank requires cuda
"""torch.compile with CUDA graphs returning a new 0-d tensor. The graph's output memory is reused by the
next call, so each output must be checked before the next call runs."""
import torch
from task import input_t, output_t


def _sum(data: input_t) -> output_t:
    x, _ = data
    return x.sum()


custom_kernel = torch.compile(_sum, mode="reduce-overhead")
