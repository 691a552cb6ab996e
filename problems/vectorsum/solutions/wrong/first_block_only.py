"""Wrong result: returns the first block's partial sum and forgets to combine the other blocks."""

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return data[:1024].sum()
