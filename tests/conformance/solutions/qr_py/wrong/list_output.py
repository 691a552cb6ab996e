"""The right numbers in a list: the checker wants a tuple, and a list must reach it as a list."""
# expect: wrong_output | output must be a tuple (H, tau)
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return list(torch.geqrf(data))
