"""C23: leave a process burning CPU after the evaluation, to slow the next one down."""
import subprocess
import sys

import torch

_burner = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
