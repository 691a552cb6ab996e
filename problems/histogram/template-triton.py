#!kernelrank requires cuda
"""histogram in Triton: every program counts its block and adds the counts to the global bins.

The skeleton runs but adds only one count per element it sees first; make every element count.
Submit with: kernelrank submit template-triton.py --leaderboard histogram
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def histogram_kernel(x_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0).to(tl.int32)
    # TODO: plain stores lose updates when elements share a bin; use tl.atomic_add (or tl.histogram per block)
    tl.store(counts_ptr + x, tl.full([BLOCK], 1, tl.int32), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x = data
    counts = torch.zeros(256, dtype=torch.int32, device=x.device)
    block = 1024
    histogram_kernel[(triton.cdiv(x.numel(), block),)](x, counts, x.numel(), BLOCK=block)
    return counts
