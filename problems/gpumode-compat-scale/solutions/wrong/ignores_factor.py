"""Wrong result: doubles the vector whatever the factor says."""

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, _, _ = data
    return x * 2.0
