"""Issue 25's red team of the judge's host memory: a correct kernel whose output lives in shared memory (as a
process pool's result buffer would; ``share_memory_``). The judge reads outputs only from the runner's private
memory, where no second mapping can make an output an input under another address, and it called this "broke the
judge's protocol" (tampering), which tells an honest author nothing. It is the output's fault and says what to do."""

import torch

_outputs = {}


def custom_kernel(data):
    a, b, _ = data
    if a.numel() not in _outputs:
        _outputs[a.numel()] = torch.empty_like(a).share_memory_()
    return torch.add(a, b, out=_outputs[a.numel()])
