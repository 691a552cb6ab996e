"""Too-low precision: computes in bfloat16 whatever the input dtype; float32 rows lose 16 mantissa bits."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return torch.softmax(data.to(torch.bfloat16), dim=-1).to(data.dtype)
