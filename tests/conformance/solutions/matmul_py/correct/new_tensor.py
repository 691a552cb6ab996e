"""Return a new tensor, as the reference does; the buffer C stays unused."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, _ = data
    return a @ b
