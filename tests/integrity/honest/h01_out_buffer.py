"""Destination passing: write into the output buffer that comes with the input."""

import torch


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
