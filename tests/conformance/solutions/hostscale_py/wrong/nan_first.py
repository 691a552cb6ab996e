"""NaN in the first element: this problem's element-wise checker lets NaN through, the harness does not."""
# expect: wrong_output | finite-output rule (the problem's checker accepted the output): the output holds NaN or Inf
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, alpha = data
    out = torch.where(x > 0, x, alpha * x)
    out.view(-1)[0] = float("nan")
    return out
