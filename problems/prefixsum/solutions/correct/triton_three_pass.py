#!kernelrank requires cuda
"""prefixsum with Triton in three passes: block sums, a scan of the block sums, then block scans plus carry.

Pass 2 runs in one program, walking the block sums in chunks with a running carry, so the carry chain is
only size / BLOCK long. Everything accumulates in float32.
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t

BLOCK = 4096          # elements per program in passes 1 and 3
CARRY_BLOCK = 1024    # block sums scanned per step in pass 2


@triton.jit
def block_sum_kernel(x_ptr, sums_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(sums_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def exclusive_scan_kernel(sums_ptr, carries_ptr, count, BLOCK: tl.constexpr):
    carry = 0.0
    for start in range(0, count, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < count
        sums = tl.load(sums_ptr + offsets, mask=mask, other=0.0)
        inclusive = tl.cumsum(sums, axis=0)
        tl.store(carries_ptr + offsets, carry + inclusive - sums, mask=mask)
        carry += tl.sum(sums, axis=0)


@triton.jit
def block_scan_kernel(x_ptr, carries_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.cumsum(x, axis=0) + tl.load(carries_ptr + pid)
    tl.store(y_ptr + offsets, y, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x = data.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    blocks = triton.cdiv(n, BLOCK)
    if blocks == 0:
        return y
    sums = torch.empty(blocks, dtype=torch.float32, device=x.device)
    carries = torch.empty_like(sums)
    block_sum_kernel[(blocks,)](x, sums, n, BLOCK=BLOCK, num_warps=8)
    exclusive_scan_kernel[(1,)](sums, carries, blocks, BLOCK=CARRY_BLOCK, num_warps=4)
    block_scan_kernel[(blocks,)](x, carries, y, n, BLOCK=BLOCK, num_warps=8)
    return y
