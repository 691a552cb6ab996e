#!kernelrank requires cuda
"""prefixsum in Triton: scan each block, then add the sum of all earlier blocks to it.

The skeleton runs but scans each block on its own; add the carry from the earlier blocks.
Submit with: kernelrank submit template-triton.py --leaderboard prefixsum
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def block_scan_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    # TODO: add the sum of every earlier block (for example from a scan of the per-block sums)
    tl.store(y_ptr + offsets, tl.cumsum(x, axis=0), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x = data
    y = torch.empty_like(x)
    block = 1024
    block_scan_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block)
    return y
