#!kernelrank requires cuda
"""identity in Triton: the skeleton runs but stores zeros; make it copy.

Submit with: kernelrank submit template-triton.py --leaderboard identity
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n  # the last block may run past the end of the vector
    # TODO: load x at offsets (masked) and store those values instead of zeros
    tl.store(out_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x = data
    out = torch.empty_like(x)
    block = 1024
    copy_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
    return out
