"""Forgets to divide by the sum: the checker answers False."""
# expect: wrong_output | the problem's checker rejected it: the checker rejected the output (it gave no reason)
import torch


def custom_kernel(xs):
    return [torch.exp(x - x.max(dim=-1, keepdim=True).values) for x in xs]
