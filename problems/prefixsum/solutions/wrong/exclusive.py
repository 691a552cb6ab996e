"""Wrong result: an exclusive scan, y[i] = x[0] + ... + x[i - 1], instead of an inclusive one."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    inclusive = torch.cumsum(data, dim=0)
    return inclusive - data
