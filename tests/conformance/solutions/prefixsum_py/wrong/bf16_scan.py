"""Scans in bfloat16: far outside the tolerance."""
# expect: wrong_output | the problem's checker rejected it: Number of mismatched elements
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, _ = data
    return torch.cumsum(x.to(torch.bfloat16), dim=0).float()
