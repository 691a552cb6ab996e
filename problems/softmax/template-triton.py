#!kernelrank requires cuda
"""softmax in Triton: one program per row, walking the row in blocks of columns.

The skeleton runs but copies x; make it compute the softmax.
Submit with: kernelrank submit template-triton.py --leaderboard softmax
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        x = tl.load(x_ptr + row * row_stride + start + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        # TODO: a first pass over the row for its maximum and the sum of exp(x - max) (in float32),
        # then a second pass that stores exp(x - max) / sum
        tl.store(y_ptr + row * row_stride + start + offsets, x.to(y_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x = data.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    block = min(triton.next_power_of_2(cols), 4096)
    softmax_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=block)
    return y
