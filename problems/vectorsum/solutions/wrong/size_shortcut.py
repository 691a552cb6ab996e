# fixture: fails only in ranked mode
"""Wrong on large inputs only: exact on small vectors, a bfloat16 "fast path" above 64 Ki elements.

Every test shape is below the threshold, so test mode passes; ranked mode checks the benchmark shapes
(on CPU too: the CPU benchmark shapes are above the threshold) and must reject it (integrity C15).
"""

import torch
from task import input_t, output_t

THRESHOLD = 65536


def custom_kernel(data: input_t) -> output_t:
    if data.numel() > THRESHOLD:
        return data.to(torch.bfloat16).sum().to(torch.float32)
    return data.sum(dtype=torch.float64).to(torch.float32)
