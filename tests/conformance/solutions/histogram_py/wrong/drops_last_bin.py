"""Never counts the value 255: the checker's string names the mismatch."""
# expect: wrong_output | the problem's checker rejected it: mismatch found! custom implementation doesn't match reference: Number of mismatched elements: 1
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    data, output = data
    output[...] = torch.bincount(data, minlength=256)
    output[255] = 0
    return output
