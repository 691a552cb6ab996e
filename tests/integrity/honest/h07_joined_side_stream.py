"""Half of the work on a side stream that waits for the current one and is joined back before returning."""

#!kernelrank requires cuda
import torch
from task import input_t, output_t

_side = torch.cuda.Stream()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    out = torch.empty_like(a)
    half = a.shape[0] // 2
    current = torch.cuda.current_stream()
    _side.wait_stream(current)
    with torch.cuda.stream(_side):
        out[:half] = (a[:half].float() + b[:half].float()).half()
    out[half:] = (a[half:].float() + b[half:].float()).half()
    current.wait_stream(_side)
    return out
