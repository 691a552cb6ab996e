def custom_kernel(data, depth=0):
    return custom_kernel(data, depth + 1)
