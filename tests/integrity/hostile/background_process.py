"""Starts a detached process that would outlive the evaluation, then answers correctly."""
import subprocess

import torch

_daemon = subprocess.Popen(["sleep", "600"], start_new_session=True)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
