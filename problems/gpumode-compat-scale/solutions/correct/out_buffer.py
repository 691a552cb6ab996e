"""Scale into the preallocated output buffer and return it, as GPU MODE submissions often do."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, factor, output = data
    return torch.mul(x, factor, out=output)
