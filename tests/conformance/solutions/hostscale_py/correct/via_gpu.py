#!kernelrank requires cuda
"""Copies the host data to the GPU, computes there and returns a host tensor, as the reference does."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, alpha = data
    on_gpu = x.to("cuda", non_blocking=False)
    return torch.nn.functional.leaky_relu(on_gpu, alpha).cpu()
