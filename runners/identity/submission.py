# The identity check's submission in plain PyTorch.
def custom_kernel(data):
    source, out = data
    return out.copy_(source)
