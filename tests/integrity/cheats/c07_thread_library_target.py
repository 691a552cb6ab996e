"""C7: a thread whose target is a library function, so no frame of the submission shows in it."""
import threading
import time

import torch


def custom_kernel(data):
    a, b, out = data
    threading.Thread(target=time.sleep, args=(0.2,), daemon=True).start()    # stands in for any library call
    return torch.add(a, b, out=out)
