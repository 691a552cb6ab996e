"""128 sleeping copies of the worker, then the right answer: neither a memory nor a process problem."""
import os
import time

import torch


def custom_kernel(data):
    a, b, out = data
    if not getattr(custom_kernel, "forked", False):
        custom_kernel.forked = True
        for _ in range(128):
            if os.fork() == 0:
                time.sleep(600)
                os._exit(0)
    return torch.add(a, b, out=out)
