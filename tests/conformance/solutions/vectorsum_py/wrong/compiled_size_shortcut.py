#!kernelrank requires cuda
"""torch.compile with CUDA graphs, and a shortcut on large inputs (sums 99 % and scales up): only the
benchmark shapes are large, and the checker catches it there."""
# expect: wrong_output | the problem's checker rejected it: sum
import torch
from task import input_t, output_t


def _sum(data: input_t) -> output_t:
    x, out = data
    n = x.numel()
    part = n // 100 * 99 if n > 1_000_000 else n
    out[...] = x[:part].sum() * n / part
    return out


custom_kernel = torch.compile(_sum, mode="reduce-overhead")
