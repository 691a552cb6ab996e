"""torch.compile of the sum, configured the way tuning guides suggest (vectoradd's float16 matrices)."""

import torch
from task import input_t, output_t

torch._dynamo.config.cache_size_limit = 64  # configuration, not patching
torch.backends.cuda.matmul.allow_tf32 = False


@torch.compile(dynamic=True)
def _add(a, b):
    return (a.float() + b.float()).half()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return _add(a, b)
