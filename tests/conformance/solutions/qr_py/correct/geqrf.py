"""The public qr_py reference submission: torch's own geqrf, returned as the named tuple it is."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return torch.geqrf(data)
