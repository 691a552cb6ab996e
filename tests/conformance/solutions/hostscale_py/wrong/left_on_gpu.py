#!kernelrank requires cuda
"""Returns the GPU tensor where the reference returns a host tensor."""
# expect: bad_output_type | same-device rule (the problem's checker was not consulted)
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, alpha = data
    return torch.nn.functional.leaky_relu(x.cuda(), alpha)
