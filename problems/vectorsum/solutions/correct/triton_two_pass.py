#!kernelrank requires cuda
"""vectorsum with Triton in two passes: a float32 partial sum per block, then one program sums the partials.

No atomics, so the result is deterministic and the error stays a tree's (log of the size), not a chain's.
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t

BLOCK = 8192          # elements per program in the first pass
FINAL_BLOCK = 1024    # partials summed per step in the second pass


@triton.jit
def partial_sum_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def final_sum_kernel(partial_ptr, out_ptr, count, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, count, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offsets, mask=offsets < count, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def custom_kernel(data: input_t) -> output_t:
    x = data.contiguous()
    n = x.numel()
    count = max(triton.cdiv(n, BLOCK), 1)
    partial = torch.empty(count, dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    partial_sum_kernel[(count,)](x, partial, n, BLOCK=BLOCK, num_warps=8)
    final_sum_kernel[(1,)](partial, out, count, BLOCK=FINAL_BLOCK, num_warps=4)
    return out
