#!kernelrank requires cuda
"""softmax with Triton: one program per row, two passes over column blocks.

Pass 1 keeps a running maximum and a running sum of exp(x - max), rescaling the sum whenever the maximum
grows (online softmax), so any row length fits; pass 2 writes exp(x - max) / sum. Math in float32.
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    offsets = tl.arange(0, BLOCK)
    row_max = -float("inf")
    row_sum = 0.0
    for start in range(0, cols, BLOCK):      # every block holds at least one real column
        mask = start + offsets < cols
        x = tl.load(x_row + start + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(x, axis=0))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        row_max = new_max
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        x = tl.load(x_row + start + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - row_max) / row_sum
        tl.store(y_row + start + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x = data.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    block = min(triton.next_power_of_2(cols), 4096)
    softmax_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=block, num_warps=8 if block >= 2048 else 4)
    return y
