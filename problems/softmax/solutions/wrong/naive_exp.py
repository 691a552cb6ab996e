"""Wrong result: exp(x) / sum(exp(x)) without subtracting the row maximum; exp overflows to inf (NaN rows)."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    e = torch.exp(data.to(torch.float32))
    return (e / e.sum(dim=-1, keepdim=True)).to(data.dtype)
