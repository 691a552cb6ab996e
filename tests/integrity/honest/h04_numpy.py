"""NumPy on the host, copied into the output buffer (CPU only)."""

import numpy as np
import torch


def custom_kernel(data):
    a, b, out = data
    out.copy_(torch.from_numpy(np.add(a.numpy(), b.numpy())))
    return out
