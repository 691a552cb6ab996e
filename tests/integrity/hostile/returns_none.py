def custom_kernel(data):
    return None
