#!kernelrank requires cuda
"""vectoradd in Triton: the skeleton runs but returns A; make it return A + B.

Submit with: kernelrank submit template-triton.py --leaderboard vectoradd
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n  # the last block may run past the end
    a = tl.load(a_ptr + offsets, mask=mask)
    # TODO: load b the same way and store a + b
    tl.store(c_ptr + offsets, a, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    c = torch.empty_like(a)
    block = 1024
    add_kernel[(triton.cdiv(a.numel(), block),)](a, b, c, a.numel(), BLOCK=block)
    return c
