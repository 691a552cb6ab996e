"""An exclusive scan: every element off by one input; the checker's list of reasons says so."""
# expect: wrong_output | the problem's checker rejected it: Number of mismatched elements
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, y = data
    torch.cumsum(x, dim=0, out=y)
    return y - x
