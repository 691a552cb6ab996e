"""Issue 25's red team of the judge's host memory: a correct kernel whose process makes itself undumpable at import
(``prctl(PR_SET_DUMPABLE, 0)``), so the kernel refuses the judge's ``process_vm_writev`` of the inputs. The judge
took the refusal for its own fault and the evaluation ended as a harness error ("report it to the maintainers");
a runner that shuts the judge out of its memory breaks the judge's protocol, and that is the verdict."""

import ctypes

import torch

ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
