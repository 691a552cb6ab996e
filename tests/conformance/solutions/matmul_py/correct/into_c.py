"""Destination passing: write A @ B into the buffer C that comes with the input, and return C."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, c = data
    torch.matmul(a, b, out=c)
    return c
