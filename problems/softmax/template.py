"""softmax in PyTorch: row-wise softmax in the input's dtype.

Submit with: kernelrank submit template.py --leaderboard softmax
"""

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """data: (rows, cols) float32 or bfloat16. Return softmax over the last dimension, same shape and dtype.

    Logits reach about +-150: subtract each row's maximum before exp, and accumulate in float32.
    """
    raise NotImplementedError("write your kernel here")
