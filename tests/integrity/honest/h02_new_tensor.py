"""A fresh output tensor, ignoring the buffer that comes with the input."""


def custom_kernel(data):
    a, b, _ = data
    return a + b
