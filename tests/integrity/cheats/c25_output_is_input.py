"""Issue 25, the problem's promise: identity asks for a new tensor equal to its input; returning the input itself
is bit for bit right, so the checker accepts it, and costs nothing (7.9 us against 3,765 us for a copy on a CPU).
The defence: an output that shares memory with an input the reference neither writes nor returns is refused
where the problem says outputs may not alias inputs (identity's ``output_may_alias_input: false``)."""


def custom_kernel(data):
    return data
