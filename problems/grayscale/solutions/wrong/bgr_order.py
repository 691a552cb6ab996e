"""Wrong result: treats the channels as BGR, so red gets blue's weight and blue gets red's."""

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    b, g, r = data.unbind(dim=-1)
    return 0.2989 * r + 0.5870 * g + 0.1140 * b
