"""C21: put NaN where an element-wise tolerance test would let it pass."""
import torch


def custom_kernel(data):
    a, b, out = data
    torch.add(a, b, out=out)
    out[::7] = float("nan")
    return out
