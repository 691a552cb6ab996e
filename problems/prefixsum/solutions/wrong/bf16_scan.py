"""Too-low precision: scans a bfloat16 copy to halve the bytes moved; every result keeps 8 significant bits."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return torch.cumsum(data.to(torch.bfloat16), dim=0).to(torch.float32)
