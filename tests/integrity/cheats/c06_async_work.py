"""C6: leave long work queued on the device when returning, as if a host clock without a sync timed it."""
#!kernelrank requires cuda
import torch


def custom_kernel(data):
    a, b, out = data
    torch.cuda._sleep(2_000_000)        # about a millisecond of device time, queued, not waited for
    return torch.add(a, b, out=out)
