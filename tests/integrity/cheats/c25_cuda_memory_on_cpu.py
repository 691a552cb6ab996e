"""Issue 25, a description the judge did not expect: on a CPU evaluation the runner describes its output as CUDA
memory (its link's ``send`` wrapped, an attribute of one object that no guard watches). The judge went to open it,
which starts CUDA in the judge, and on a machine without CUDA the evaluation ended as a harness error ("not your
submission's fault") instead of the runner's. The defence: CUDA memory in a CPU evaluation breaks the protocol."""
import gc

import torch

for _runner in gc.get_objects():
    if type(_runner).__name__ == "Runner" and hasattr(_runner, "link") and hasattr(_runner, "staged"):
        break
_honest = _runner.link.send


def _send(record, blobs=None):
    if record.get("t") == "done":
        record["storages"][-1] = {"cuda": {"device": 0, "size": 0}}  # the output's memory, said to be on a GPU
        blobs = blobs[:-1]
    _honest(record, blobs)


_runner.link.send = _send


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
