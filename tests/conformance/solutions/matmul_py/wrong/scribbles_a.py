"""The right product, but A is used as scratch space afterwards: a scribbled input is named as such."""
# expect: wrong_output | inputs-unchanged rule (the problem's checker accepted the output): custom_kernel changed data[0]
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, c = data
    torch.matmul(a, b, out=c)
    a.zero_()
    return c
