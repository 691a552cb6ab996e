"""Wrong shape: copies only whole blocks of 128 elements and drops the tail (a missing mask)."""

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    whole = data.numel() // 128 * 128
    return data[:whole].clone()
