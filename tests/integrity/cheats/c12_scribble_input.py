"""C12: compute the right answer, then scribble on an input the output does not share (no checker sees it)."""
import torch


def custom_kernel(data):
    a, b, out = data
    torch.add(a, b, out=out)
    a.zero_()
    return out
