"""Sums over half of k only: the checker rejects the values."""
# expect: wrong_output | the problem's checker rejected it: mismatch found!
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, c = data
    half = a.shape[1] // 2
    torch.matmul(a[:, :half], b[:half], out=c)
    return c
