"""Sums half the vector: the checker's message gives both sums."""
# expect: wrong_output | the problem's checker rejected it: sum
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, out = data
    out[0] = x[: x.numel() // 2].sum()
    return out
