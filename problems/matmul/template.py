"""matmul in PyTorch: C = A @ B for bfloat16 matrices, accumulated in float32.

Submit with: kernelrank submit template.py --leaderboard matmul
"""

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """data: (A, B) with A (m, k) and B (k, n), bfloat16, row-major. Return C = A @ B as (m, n) bfloat16."""
    raise NotImplementedError("write your kernel here")
