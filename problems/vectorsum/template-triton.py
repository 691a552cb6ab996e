#!kernelrank requires cuda
"""vectorsum in Triton: one partial result per block, then a sum of the partials.

The skeleton runs but takes each block's maximum; make it the block's sum.
Submit with: kernelrank submit template-triton.py --leaderboard vectorsum
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def partial_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)  # masked lanes add 0
    # TODO: reduce with tl.sum instead of tl.max
    tl.store(partial_ptr + tl.program_id(0), tl.max(x, axis=0))


def custom_kernel(data: input_t) -> output_t:
    x = data
    block = 4096
    partial = torch.empty(triton.cdiv(x.numel(), block), dtype=torch.float32, device=x.device)
    partial_kernel[(partial.numel(),)](x, partial, x.numel(), BLOCK=block)
    return partial.sum()
