#!kernelrank requires cuda
"""vectoradd with Triton: the matrices are contiguous, so add them as flat vectors, 4096 halves per program."""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(c_ptr + offsets, a + b, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    a, b = (t.contiguous() for t in data)
    c = torch.empty_like(a)
    n = a.numel()
    block = 4096
    add_kernel[(triton.cdiv(n, block),)](a, b, c, n, BLOCK=block, num_warps=8)
    return c
