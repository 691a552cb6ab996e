#!kernelrank requires cuda
"""histogram with Triton: a few programs per SM, each counting blocks into private bins, then one atomic add
per bin and program, so contended bins cost 256 atomics per program instead of one per element.

tl.histogram counts a block into bins of width 1 starting at 0; masked lanes load 0, so their count is
taken back out of bin 0.
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t

BINS = 256
BLOCK = 4096
PROGRAMS_PER_SM = 4


@triton.jit
def histogram_kernel(x_ptr, counts_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    bins = tl.arange(0, BINS)
    hist = tl.zeros([BINS], dtype=tl.int32)
    for start in range(pid * BLOCK, n, step):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask, other=0).to(tl.int32)
        padding = BLOCK - tl.sum(mask.to(tl.int32), axis=0)
        hist += tl.histogram(x, BINS) - tl.where(bins == 0, padding, 0)
    tl.atomic_add(counts_ptr + bins, hist)


def custom_kernel(data: input_t) -> output_t:
    x = data.contiguous()
    counts = torch.zeros(BINS, dtype=torch.int32, device=x.device)
    n = x.numel()
    if n == 0:
        return counts
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    programs = min(triton.cdiv(n, BLOCK), sms * PROGRAMS_PER_SM)
    histogram_kernel[(programs,)](x, counts, n, BLOCK=BLOCK, BINS=BINS, num_warps=8)
    return counts
