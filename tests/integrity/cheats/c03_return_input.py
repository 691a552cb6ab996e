"""C3: return one of the inputs instead of computing."""


def custom_kernel(data):
    a, b, out = data
    return a
