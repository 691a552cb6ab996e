"""Too-low precision: rounds A and B to float8 (e4m3, 4 significant bits) before multiplying."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = (t.to(torch.float8_e4m3fn).to(torch.bfloat16) for t in data)
    return torch.matmul(a, b)
