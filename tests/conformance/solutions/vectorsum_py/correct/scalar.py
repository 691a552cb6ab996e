"""A 0-d result, as the reference returns."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, _ = data
    return x.sum()
