#!kernelrank requires cuda
"""identity with Triton: each program copies one block of 4096 floats (masked at the tail)."""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x = data.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    block = 4096
    copy_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=8)
    return out
