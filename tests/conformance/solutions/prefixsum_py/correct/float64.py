"""The reference's own precision."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, _ = data
    return torch.cumsum(x.double(), dim=0)
