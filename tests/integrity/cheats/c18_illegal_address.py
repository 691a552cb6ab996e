"""C18: an index far out of bounds, read on the device."""
#!kernelrank requires cuda
import torch


def custom_kernel(data):
    a, b, out = data
    index = torch.full((1,), 2**40, device=a.device, dtype=torch.long)
    out[0] = a[index].sum()
    return torch.add(a, b, out=out)
