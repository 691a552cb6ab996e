"""Wrong shape: returns C transposed, (n, m), as a column-major kernel would lay it out."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return torch.matmul(b.t(), a.t())
