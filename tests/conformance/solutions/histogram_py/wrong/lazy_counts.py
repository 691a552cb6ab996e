"""Returns a tensor subclass where the reference returns a plain tensor: a lazy output, rejected unseen."""
# expect: bad_output_type | plain-tensor rule (the problem's checker was not consulted)
import torch
from task import input_t, output_t


class Deferred(torch.Tensor):
    """A subclass could compute its values only when someone looks at them, after the timer."""


def custom_kernel(data: input_t) -> output_t:
    data, output = data
    output[...] = torch.bincount(data, minlength=256)
    return output.as_subclass(Deferred)
